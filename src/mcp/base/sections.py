"""The pydantic bases of every config and file schema: unknown keys are errors, values frozen.

One definition instead of a private ``_Strict`` per schema file, so that every section of
``mcp-config.yaml``, the gateway's files and the lineage file refuse a misspelt key the same
way. pydantic is light (no torch, numpy or server): the base floor may import it, and only a
module that imports this one pays for it (``mcp.base`` itself imports nothing).
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

import pydantic

Resolved = TypeVar("Resolved")


class _Section(pydantic.BaseModel):
    def into(self, resolved: type[Resolved], **changed: Any) -> Resolved:
        """The frozen dataclass ``resolved`` with every field it shares by name with this section
        copied as it is, and ``changed`` for the fields converted on the way (``"auto"`` to None, a
        path resolved) or that the section lacks. A resolver then names only what it converts,
        instead of writing each field a third time (the section, the dataclass, the resolver)."""
        names = {f.name for f in dataclasses.fields(resolved)}  # type: ignore[arg-type]
        copied = {name: getattr(self, name) for name in type(self).model_fields if name in names}
        return resolved(**{**copied, **changed})


class StrictSection(_Section):
    """Extra keys refused, no type coercion (``"8"`` is not an int), immutable once read."""

    model_config = pydantic.ConfigDict(extra="forbid", strict=True, frozen=True)


class LaxSection(_Section):
    """Extra keys refused and immutable, with pydantic's usual coercion: the gateway's config
    and routing files have always accepted it, and tightening them would break existing files."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True)
