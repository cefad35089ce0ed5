"""A compile reports each tensor it converts to the caller's progress callback, and nothing else
hears of it: the count reaches the header's tensors and the bytes the file's data section."""

from __future__ import annotations

import struct

from mcp.compiler.compiler import compile_model
from mcp.modelfile.inspect import tensor_nbytes


def test_compile_reports_every_tensor_converted(smollm2_gguf, tmp_path, capfd):
    out = tmp_path / "smol.mcp"
    events = []
    header = compile_model(smollm2_gguf, out, progress=events.append)  # auto: Q8_0 splits into codes and scales
    assert {event.phase for event in events} == {"compile"}
    first, converting, last = events[0], events[1:-1], events[-1]
    assert first.subject == f"reading {smollm2_gguf.name}" and first.num_total is None
    assert {event.subject for event in converting} == {spec.name for spec in header.tensors}
    assert [event.num_done for event in converting] == sorted(event.num_done for event in converting)
    assert last.finished and last.subject == "smol.mcp"
    assert last.num_done == last.num_total == len(header.tensors)
    assert last.bytes_done == last.bytes_total == sum(tensor_nbytes(spec) for spec in header.tensors)
    with open(out, "rb") as handle:
        (header_length,) = struct.unpack("<Q", handle.read(8))
    assert out.stat().st_size == 8 + header_length + last.bytes_total  # the data section, every byte counted
    assert capfd.readouterr() == ("", "")
