"""The native kernels' extension (``mcp.engine.kernels._cpu``), loaded without torch.

``import mcp.engine.kernels`` runs that package's ``__init__``, whose torch wrappers import
torch; the extension itself needs only Python and libgomp (it takes raw pointers). So it is
loaded here from its file, under its own name, and registered in ``sys.modules``: a later
``import mcp.engine.kernels`` in the same process finds the same module and never loads the
library twice.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

_NAME = "mcp.engine.kernels._cpu"


def load() -> ModuleType:
    """The extension module; ``RuntimeError`` saying how to build it when it is not built."""
    if _NAME in sys.modules:
        return sys.modules[_NAME]
    package = importlib.util.find_spec("mcp.engine")  # mcp/engine/__init__.py imports nothing
    folders = [str(Path(folder) / "kernels") for folder in (package.submodule_search_locations or [])]
    spec = importlib.machinery.PathFinder.find_spec(_NAME, folders)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"the native CPU kernels are not built (no {_NAME} in {', '.join(folders)}); "
                           "run `make install` (or pip install -e .) to build them")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[_NAME] = module
    return module
