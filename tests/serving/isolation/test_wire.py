"""Frames on the worker channel: length-prefixed orjson, nothing else accepted."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

from mcp.serving.isolation.wire import MAX_FRAME_BYTES, ChannelClosed, FrameChannel


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield FrameChannel(a), FrameChannel(b)
    a.close()
    b.close()


def test_a_frame_arrives_whole_and_in_order(pair):
    left, right = pair
    big = "x" * 3_000_000  # more than the socket buffer: read while it is sent
    sender = threading.Thread(target=lambda: (
        left.send({"op": "steps", "items": [[1, [[5, "hé", None, [], None]], None]]}),
        left.send({"op": "big", "text": big})))
    sender.start()
    assert right.recv() == {"op": "steps", "items": [[1, [[5, "hé", None, [], None]], None]]}
    assert right.recv()["text"] == big
    sender.join(10)


def test_the_wire_bytes_are_a_length_then_json(pair):
    left, right = pair
    left.send({"op": "cancel", "sid": 3})
    raw = right.sock.recv(100)
    assert raw == struct.pack(">I", len(b'{"op":"cancel","sid":3}')) + b'{"op":"cancel","sid":3}'


@pytest.mark.parametrize("payload, text", [
    (struct.pack(">I", MAX_FRAME_BYTES + 1), "over the"),
    (struct.pack(">I", 4) + b"\x80\x04K.", "not JSON"),  # a pickle is refused, never loaded
    (struct.pack(">I", 2) + b"[]", "not an object with an 'op'"),
])
def test_bad_frames_close_the_channel(pair, payload, text):
    left, right = pair
    left.sock.sendall(payload)
    with pytest.raises(ChannelClosed, match=text):
        right.recv()


def test_the_other_end_closing_is_channel_closed(pair):
    left, right = pair
    left.close()
    with pytest.raises(ChannelClosed, match="closed"):
        right.recv()
