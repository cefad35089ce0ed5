"""A model's worker process: ``python -m mcp.serving.isolation.worker FD NAME``.

FD is its end of the socketpair to the supervisor; NAME (the model's name:version, or
``spare``) is only there for ``ps``; once given its model, a worker also takes the model's
name:version as its process name (``ps -o pid,comm``, ``/proc/PID/comm``: 15 characters), so
that a worker that was a spare shows which model it serves too. The worker reads its ``WorkerLaunch`` (a ``prepare``
frame), sets its threads, enters the sandbox (sandbox.py), and says ``idle``: from here on it
runs sandboxed, and a spare worker (spares.py) waits here, its interpreter, torch and kernels
already loaded. Given its ``WorkerSpec`` (a ``start`` frame), it sets its address space limit,
opens the model file read-only, measures it (sha256, on a thread beside the load), parses,
checks and loads the engine from that same open file, and says ``ready`` with the checked
header (a bad file is a ``failed`` frame carrying its ``ModelFormatError``). Then it serves
frames from the supervisor (``submit``, ``cancel``, ``stats``, ``probe``, ``shutdown``) on the
main thread, while a sender thread batches the engine's token steps: one ``steps`` frame
carries every request's new tokens and endings queued by then (the loop pushes one step's
outputs together).
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import orjson
import torch

from mcp.base.errors import ConfigError, MCPError, ModelFormatError
from mcp.config.isolation import address_space_bytes
from mcp.engine.embedding_loop import EmbeddingLoop
from mcp.engine.engine import EngineOptions, NativeEngine, resolve_device
from mcp.engine.handle import RequestHandle
from mcp.engine.hooks import HookRegistry
from mcp.engine.loop import EngineLoop
from mcp.engine.tokenizer import Tokenizer
from mcp.modelfile.spec import TokenizerSpec
from mcp.runtime.session import load_on_a_passing_thread
from mcp.serving.isolation import codec
from mcp.serving.isolation.probe import measure_isolation
from mcp.serving.isolation.sandbox import enter_sandbox, libc, limit_address_space
from mcp.serving.isolation.spec import WorkerLaunch, WorkerSpec
from mcp.serving.isolation.worker_embed import answer_embedding
from mcp.serving.isolation.wire import MAX_FRAME_BYTES, ChannelClosed, FrameChannel

logger = logging.getLogger("mcp.serving.isolation")
PR_SET_NAME = 15


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    channel = FrameChannel(socket.socket(fileno=int(argv[1])))
    try:
        prepared = Prepared.enter(channel.recv(), argv[2])
        channel.send({"op": "idle", "pid": os.getpid(), "sandbox": prepared.sandbox})
        start = channel.recv()  # a spare waits here
        if start["op"] != "start":
            return 0  # a spare that is no longer needed
        worker = Worker.start(WorkerSpec.from_wire(start), channel, prepared)
    except ChannelClosed:
        return 1  # the supervisor went away before we were ready
    except Exception as exc:  # noqa: BLE001 - reported to the supervisor, which raises it
        channel.send({"op": "failed", "error": codec.encode_error(exc)})
        return 2
    worker.serve()
    return 0


def sha256_of_fd(fd: int) -> str:
    """The file's sha256, read into one reused 1 MiB buffer (it stays in cache: 10-20% faster
    than a new 4 MiB bytes object per read)."""
    digest, offset = hashlib.sha256(), 0
    buffer = bytearray(1 << 20)
    view = memoryview(buffer)
    while size := os.preadv(fd, [buffer], offset):
        digest.update(view[:size])
        offset += size
    return digest.hexdigest()


class Prepared:
    """A worker set up and sandboxed for its ``WorkerLaunch``, before it is given a model."""

    def __init__(self, launch: WorkerLaunch, device: torch.device, sandbox: dict[str, Any]) -> None:
        self.launch, self.device, self.sandbox = launch, device, sandbox

    @classmethod
    def enter(cls, prepare: dict[str, Any], name: str) -> Prepared:
        launch = WorkerLaunch.from_wire(prepare)
        if launch.num_threads is not None:
            torch.set_num_threads(launch.num_threads)
        device = resolve_device(launch.device)
        sandbox = enter_sandbox(launch.limits, name)
        if prepare.get("tokenizer"):
            _build_tokenizer_ahead(prepare["tokenizer"])
        return cls(launch, device, sandbox)


def _name_process(name: str) -> None:
    """``prctl(PR_SET_NAME)``: the main thread's name is the process's ``comm``."""
    libc().prctl(PR_SET_NAME, name.encode()[:15], 0, 0, 0)


def _build_tokenizer_ahead(data: dict[str, Any]) -> None:
    """Parse the tokenizer of a model served before (sent by the supervisor; parsing it is most of
    a warm load) into the tokenizer cache. Only a hint: the load uses it only when the model
    file's own tokenizer is the same, byte for byte (tokenizer.py keys the cache by its sha256)."""
    try:
        Tokenizer.from_spec(TokenizerSpec(**{**data, "eos_token_ids": tuple(data["eos_token_ids"])}))
    except (MCPError, TypeError, KeyError) as exc:
        logger.warning("the tokenizer sent ahead was not built (%s); the model's own is built at load", exc)


class Worker:
    """One model's engine loop behind the channel."""

    def __init__(self, spec: WorkerSpec, channel: FrameChannel, loop: EngineLoop, model_fd: int) -> None:
        self.spec, self.channel, self.loop, self.model_fd = spec, channel, loop, model_fd
        self._live: dict[int, RequestHandle] = {}  # supervisor's id -> handle
        self._lock = threading.Lock()
        self._ready_to_send = threading.Event()
        self._stopping = False

    @classmethod
    def start(cls, spec: WorkerSpec, channel: FrameChannel, prepared: Prepared) -> Worker:
        if spec.launch != prepared.launch:  # the supervisor never sends one: a bug, said plainly
            raise ConfigError(f"the worker was started for {prepared.launch} but given model {spec.name} "
                              f"with {spec.launch}")
        started, sandbox = time.perf_counter(), prepared.sandbox
        _name_process(spec.name)
        model_bytes = os.stat(spec.model_path).st_size
        limit_address_space(sandbox, address_space_bytes(spec.limits, model_bytes, prepared.device.type))
        model_fd = os.open(spec.model_path, os.O_RDONLY | os.O_CLOEXEC)
        measured, engine = _measure_and_load(spec, model_fd)
        loaded = time.perf_counter()
        header = _header_for_supervisor(spec, engine)  # {"header_sha256": ..., "header": text or None}
        kind = EmbeddingLoop if engine.is_encoder else EngineLoop  # an encoder embeds (worker_embed.py)
        loop = kind(engine, codec.decode_loop_config(spec.loop_config), HookRegistry(), spec.name)
        channel.send({"op": "ready", "pid": os.getpid(), "precision": engine.precision, **header,
                      "plan": {name: plan.decode for name, plan in engine.plan.by_tensor.items()},
                      "max_context": engine.max_context, "device": str(engine.device),
                      "weight_bytes": engine.weight_memory().weight_bytes,
                      "model_sha256": measured, "measurements": list(spec.measurements), "sandbox": sandbox})
        logger.info("worker %s ready (pid %d, model sha256 %s) in %.0f ms: measured and loaded in %.0f, header "
                    "%s in %.0f", spec.name, os.getpid(), measured[:12], (time.perf_counter() - started) * 1000,
                    (loaded - started) * 1000, "sent" if header["header"] else "named",
                    (time.perf_counter() - loaded) * 1000)
        return cls(spec, channel, loop, model_fd)

    def serve(self) -> None:
        sender = threading.Thread(target=self._send_steps, name="mcp-worker-sender", daemon=True)
        sender.start()
        try:
            while not self._stopping:
                self._dispatch(self.channel.recv())
        except ChannelClosed:
            pass  # the supervisor closed the channel (or died): stop
        finally:
            self._stopping = True
            self.loop.close()  # every live request ends; the sender sends what it can
            self._ready_to_send.set()
            sender.join(timeout=5.0)

    # -- frames from the supervisor -------------------------------------------------------
    def _dispatch(self, message: dict[str, Any]) -> None:
        op = message["op"]
        if op == "submit":
            self._submit(message)
        elif op == "cancel":
            handle = self._live.get(int(message["sid"]))
            if handle is not None:
                handle.cancel()
        elif op == "embed":
            answer_embedding(self.loop, message, self._reply)
        elif op == "stats":
            self._reply(message, asdict(self.loop.stats()))
        elif op == "probe":
            self._reply(message, measure_isolation(self.spec.model_path, self.model_fd,
                                                    (str(message["host"]), int(message["port"]))))
        elif op == "shutdown":
            self._stopping = True

    def _submit(self, message: dict[str, Any]) -> None:
        sid = int(message["sid"])
        try:
            params, options = codec.decode_request(message["request"])
            handle = self.loop.submit(message["prompt_ids"], params, options)
        except MCPError as exc:
            self._reply(message, None, exc)
            return
        with self._lock:
            self._live[sid] = handle
        handle.watch(self._ready_to_send.set)
        self._reply(message, {"request_id": handle.request_id})
        self._ready_to_send.set()  # a step pushed before watch() started is sent too

    def _reply(self, message: dict[str, Any], result: Any, error: BaseException | None = None) -> None:
        self.channel.send({"op": "reply", "rid": message["rid"], "result": result,
                           "error": None if error is None else codec.encode_error(error)})

    # -- steps to the supervisor ----------------------------------------------------------
    def _send_steps(self) -> None:
        while True:
            self._ready_to_send.wait()
            self._ready_to_send.clear()
            items = self._drain()
            if items:
                try:
                    self.channel.send({"op": "steps", "time_s": time.monotonic(), "items": items})
                except ChannelClosed:
                    return
                except Exception:  # noqa: BLE001 - a dead sender would wedge every request: exit, be restarted
                    logger.exception("the worker cannot send its steps; exiting so that it is restarted")
                    os._exit(70)
            if self._stopping and not self._live:
                return

    def _drain(self) -> list[list[Any]]:
        with self._lock:
            live = list(self._live.items())
        items = []
        for sid, handle in live:
            steps, outcome = handle.drain()
            if not steps and outcome is None:
                continue
            items.append([sid, [codec.encode_step(s) for s in steps],
                          None if outcome is None else codec.encode_outcome(outcome)])
            if outcome is not None:
                with self._lock:
                    del self._live[sid]
        return items


def _measure_and_load(spec: WorkerSpec, model_fd: int) -> tuple[str, NativeEngine]:
    """The file's sha256 and its engine, the hash on a thread beside the load (hashlib lets go of
    the GIL); nothing is reported, nor served, before both are done."""
    digest: dict[str, str] = {}
    hasher = threading.Thread(target=lambda: digest.update(sha256=sha256_of_fd(model_fd)), name="mcp-measure")
    hasher.start()
    try:
        engine = _load_engine(spec, model_fd)
    finally:
        hasher.join()
    if "sha256" not in digest:
        raise ModelFormatError(f"{spec.model_path}: the model file could not be read to measure it")
    return digest["sha256"], engine


def _load_engine(spec: WorkerSpec, model_fd: int) -> NativeEngine:
    """The engine, built from the descriptor just measured (``/proc/self/fd/N``: the same file,
    even if the path was replaced since)."""
    opened = f"/proc/self/fd/{model_fd}"
    try:
        return load_on_a_passing_thread(Path(opened), spec.engine.verify, EngineOptions.of(spec.engine))
    except MCPError as exc:  # name the model's own path, not the descriptor's
        raise type(exc)(str(exc).replace(opened, spec.model_path)) from None


def _header_for_supervisor(spec: WorkerSpec, engine: NativeEngine) -> dict[str, str | None]:
    """The header this worker parsed and checked, as JSON, and the JSON's sha256: the supervisor
    builds the tokenizer and chat template from it and never parses the model file itself. When
    the supervisor holds that header already (its digest is in ``spec.known_headers``: a new
    version of a model it serves), only the digest is sent."""
    data = orjson.dumps(engine.header)  # orjson writes dataclasses itself, in field order: 5x asdict's speed
    digest = hashlib.sha256(data).hexdigest()
    if digest in spec.known_headers:
        return {"header_sha256": digest, "header": None}
    if len(data) > MAX_FRAME_BYTES - (1 << 20):
        raise ModelFormatError(f"{spec.model_path}: the .mcp header is {len(data)} bytes, too large to hand "
                               f"to the server (at most {MAX_FRAME_BYTES - (1 << 20)} with worker isolation)")
    return {"header_sha256": digest, "header": data.decode()}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
