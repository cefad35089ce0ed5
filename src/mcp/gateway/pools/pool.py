"""An instance pool: pick a member, send, retry where it is safe.

Picking: among members whose breaker lets a request through, the one with the fewest requests
in flight (ties rotate), preferring those whose last health check passed; in a pool with
``picking: prefix``, first the member the prompt's prefix hashes to, unless it is over the load
bound (pools/prefix.py), so that a shared system prompt stays in one member's prefix cache. Sending: a member is
tried at most once per request, up to ``max_attempts`` members. A connect error, a timeout, a
5xx other than 500 or a 429 before anything was passed on is retried on another member; a 4xx
is the client's and goes back as it is. A stream is committed only once its first bytes have
arrived: until then it is retried like any request, afterwards never (``UpstreamReply.chunks``
carries on).

Breakers count only what is the member's fault: transport errors, timeouts, and 5xx that say
the member cannot serve (502, 503, 504, ...). A 500 is the member answering that this request
failed there: the same request fails the same way on every member, so it goes back as it is,
counted in the member's failures but not by its breaker. Otherwise any client could open every
breaker with a few requests that trip one bug, and lock every tenant out (issue 28, finding 2).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

from mcp.gateway.errors import UpstreamError
from mcp.gateway.metrics import GatewayMetrics
from mcp.gateway.pools.breaker import BreakerState, CircuitBreaker
from mcp.gateway.pools.member import Member
from mcp.gateway.pools.prefix import load_bound, prefix_key, rendezvous_order
from mcp.gateway.pools.spec import PoolSpec

STATUS_FOR = {"error": 502, "timeout": 504, "over_capacity": 429}


@dataclass(frozen=True)
class UpstreamRequest:
    path: str  # /v1/chat/completions
    body: bytes
    headers: dict[str, str]
    stream: bool
    prompt_head: str = ""  # the prompt's first characters: prefix-aware pools pick by them


@dataclass(eq=False)
class UpstreamReply:
    member: Member
    status: int
    headers: httpx.Headers
    body: bytes  # the whole body; for a stream, its first bytes
    attempts: int = 1
    response: httpx.Response | None = None  # an open stream still to be read
    chunks: AsyncIterator[bytes] | None = None


class AttemptFailed(Exception):
    def __init__(self, reason: str, message: str, status: int | None = None, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.reason, self.status, self.retry_after = reason, status, retry_after


class InstancePool:
    def __init__(self, spec: PoolSpec, client: httpx.AsyncClient, metrics: GatewayMetrics) -> None:
        self.spec = spec
        self.client = client
        self.metrics = metrics
        self.members = [Member(m, CircuitBreaker(spec.breaker)) for m in spec.members]
        self._lock = threading.Lock()
        self._rotation = itertools.count()

    @property
    def name(self) -> str:
        return self.spec.name

    def pick(self, exclude: set[str], prompt_head: str = "") -> Member | None:
        """The member not in ``exclude`` whose breaker admits a request (now counted in flight), or
        None: in a prefix-aware pool the first in the prompt prefix's order that is under the load
        bound, else (and for a prompt shorter than a block) the least loaded."""
        with self._lock:
            candidates = [m for m in self.members if m.name not in exclude]
            healthy = [m for m in candidates if m.healthy] or candidates  # health checks advise, breakers decide
            for member in self._by_prefix(healthy, prompt_head) + self._by_load(healthy):
                if member.breaker.try_acquire():
                    member.outstanding += 1
                    member.num_requests += 1
                    return member
        return None

    def _by_load(self, members: list[Member]) -> list[Member]:
        shift = next(self._rotation) % max(1, len(members))
        return sorted(members[shift:] + members[:shift], key=lambda m: m.outstanding)

    def _by_prefix(self, members: list[Member], prompt_head: str) -> list[Member]:
        """The members the prompt's prefix prefers, in its order, those over the load bound left out."""
        key = prefix_key(prompt_head, self.spec.prefix.block_chars) if self.spec.picking == "prefix" else None
        if key is None:
            return []
        by_name = {m.name: m for m in members}
        bound = load_bound(sum(m.outstanding for m in self.members), len(self.members), self.spec.prefix.load_factor)
        return [by_name[name] for name in rendezvous_order(key, list(by_name)) if by_name[name].outstanding < bound]

    def preview(self) -> Member | None:
        """The member ``pick`` would choose now, without sending anything or counting it."""
        with self._lock:
            candidates = [m for m in self.members if m.healthy] or self.members
            usable = [m for m in candidates if m.breaker.state != BreakerState.OPEN]
            return min(usable, key=lambda m: m.outstanding, default=None)

    async def send(self, request: UpstreamRequest, timeout_s: float) -> UpstreamReply:
        """The first usable reply; ``UpstreamError`` when every attempt failed."""
        tried: list[str] = []
        failure: AttemptFailed | None = None
        for _ in range(self.spec.max_attempts):
            member = self.pick(set(tried), request.prompt_head)
            if member is None:
                break
            if failure is not None:
                self.metrics.retries.labels(self.name, failure.reason).inc()
            tried.append(member.name)
            try:
                reply = await self._attempt(member, request, timeout_s)
            except AttemptFailed as exc:
                failure = exc
                continue
            reply.attempts = len(tried)
            return reply
        raise self._exhausted(tried, failure)

    def finish(self, reply: UpstreamReply, ok: bool, error: str | None = None) -> None:
        """A stream ended (``ok``: completely): the member's request is over."""
        self._done(reply.member, ok, breaker=True, error=error)

    async def _attempt(self, member: Member, request: UpstreamRequest, timeout_s: float) -> UpstreamReply:
        started = time.perf_counter()
        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, self.spec.connect_timeout_s))
        headers = dict(request.headers)
        if self.spec.api_key:
            headers["authorization"] = f"Bearer {self.spec.api_key}"
        client = member.client or self.client
        upstream = client.build_request("POST", member.spec.url + request.path, content=request.body,
                                             headers=headers, timeout=timeout)
        response = None
        try:
            response = await client.send(upstream, stream=True)
            if not (request.stream and response.status_code == 200):
                body = await response.aread()
                await response.aclose()
                return self._whole(member, response, body, started)
            chunks = response.aiter_raw()
            first = await anext(chunks, b"")
            if not first:
                raise httpx.RemoteProtocolError("the stream ended before its first event")
        except httpx.TransportError as exc:
            if response is not None:
                await response.aclose()
            raise self._failed(member, _reason(exc), f"{member.name}: {type(exc).__name__}: {exc}") from None
        except asyncio.CancelledError:  # the client went away: not the member's fault
            if response is not None:
                await response.aclose()
            self._done(member, ok=True, breaker=False)
            raise
        self.metrics.upstream_latency.labels(self.name, member.name).observe(time.perf_counter() - started)
        return UpstreamReply(member, 200, response.headers, first, response=response, chunks=chunks)

    def _whole(self, member: Member, response: httpx.Response, body: bytes, started: float) -> UpstreamReply:
        status = response.status_code
        self.metrics.upstream_latency.labels(self.name, member.name).observe(time.perf_counter() - started)
        if status == 429:
            self._done(member, ok=True, breaker=False)  # busy, not broken: the breaker stays as it is
            raise AttemptFailed("over_capacity", f"{member.name}: 429 {_snippet(body)}", status,
                                response.headers.get("retry-after"))
        if status == 500:  # the request's failure, not the member's (see the module docstring)
            self._done(member, ok=False, breaker=False, error=f"{member.name}: 500 {_snippet(body)}")
            return UpstreamReply(member, status, response.headers, body)
        if status > 500:
            raise self._failed(member, "error", f"{member.name}: {status} {_snippet(body)}", status)
        self._done(member, ok=True, breaker=True)
        return UpstreamReply(member, status, response.headers, body)

    def _failed(self, member: Member, reason: str, message: str, status: int | None = None) -> AttemptFailed:
        self._done(member, ok=False, breaker=True, error=message)
        return AttemptFailed(reason, message, status)

    def _done(self, member: Member, ok: bool, breaker: bool, error: str | None = None) -> None:
        with self._lock:
            member.outstanding -= 1
            if not ok:
                member.num_failures += 1
                member.last_error = error
        if breaker:
            member.breaker.record_success() if ok else member.breaker.record_failure()

    def _exhausted(self, tried: list[str], failure: AttemptFailed | None) -> UpstreamError:
        if failure is None:
            states = ", ".join(f"{m.name} {m.breaker.state.name.lower()}" for m in self.members) or "no members"
            return UpstreamError(f"pool {self.name!r} has no member to take the request ({states}); "
                                 "retry later", "error", 503, 1.0)
        retry_after = float(failure.retry_after) if (failure.retry_after or "").isdigit() else None
        return UpstreamError(f"pool {self.name!r}: all {len(tried)} attempt(s) failed ({', '.join(tried)}); "
                             f"last: {failure}", failure.reason, STATUS_FOR[failure.reason], retry_after)

    def describe(self) -> dict:
        return {"name": self.name, "members": [m.describe() for m in self.members]}


def _reason(exc: httpx.TransportError) -> str:
    return "timeout" if isinstance(exc, httpx.TimeoutException) else "error"


def _snippet(body: bytes, limit: int = 300) -> str:
    return body[:limit].decode("utf-8", "replace").strip()
