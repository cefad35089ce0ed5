"""Frames between the supervisor and a worker: a 4-byte big-endian length, then one orjson
object. Nothing is ever unpickled: the supervisor reads a worker's frames as plain JSON data
(a compromised worker can send wrong numbers, never code).

A ``FrameChannel`` sends from any thread (one lock) and receives on one thread. ``encode``
turns a message into its frame first, so a value JSON cannot carry fails the caller that
sent it, never the thread that writes to the socket.
"""

from __future__ import annotations

import socket
import struct
import threading
from typing import Any

import orjson

MAX_FRAME_BYTES = 64 << 20  # a frame past this is a protocol error, not an allocation
_LENGTH = struct.Struct(">I")


class ChannelClosed(Exception):
    """The other end closed the channel (or sent something that is not a frame)."""


class UnsendableFrame(ValueError):
    """A message orjson cannot write (an integer past 64 bits, a lone surrogate, an unknown
    type). Raised by ``encode`` on the sender's thread, before anything is written."""


def encode(message: dict[str, Any]) -> bytes:
    """One whole frame (length and body) for ``message``; raises UnsendableFrame."""
    try:
        body = orjson.dumps(message)
    except orjson.JSONEncodeError as exc:
        raise UnsendableFrame(str(exc)) from None
    return _LENGTH.pack(len(body)) + body


class FrameChannel:
    """Length-prefixed orjson frames over a connected stream socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._send_lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        self.send_frame(encode(message))

    def send_frame(self, frame: bytes) -> None:
        """Write a frame ``encode`` made (it cannot fail to encode any more: only the socket can)."""
        with self._send_lock:
            try:
                self.sock.sendall(frame)
            except OSError as exc:
                raise ChannelClosed(f"the channel is closed ({exc})") from None

    def recv(self) -> dict[str, Any]:
        (length,) = _LENGTH.unpack(self._read(_LENGTH.size))
        if length > MAX_FRAME_BYTES:
            raise ChannelClosed(f"a frame of {length} bytes is over the {MAX_FRAME_BYTES} byte limit")
        try:
            message = orjson.loads(self._read(length))
        except orjson.JSONDecodeError as exc:
            raise ChannelClosed(f"a frame is not JSON ({exc})") from None
        if not isinstance(message, dict) or not isinstance(message.get("op"), str):
            raise ChannelClosed("a frame is not an object with an 'op'")
        return message

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass  # already closed or never connected
        self.sock.close()

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            try:
                chunk = self.sock.recv(min(left, 1 << 20))
            except OSError as exc:
                raise ChannelClosed(f"the channel is closed ({exc})") from None
            if not chunk:
                raise ChannelClosed("the other end closed the channel")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
