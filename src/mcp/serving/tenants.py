"""Tenants: who a request's API key belongs to, what it may do, and its per-minute limits.

Keys are kept as sha256 hex digests (config ``serving.tenants[].key_sha256``) and compared in
constant time. With no tenants configured the server runs open: every request is tenant
``default`` (or the one its ``x-tenant-id`` header names, which only steers fair-share
scheduling) with the admin role, and ``mcp2026 serve`` binds 127.0.0.1 only. With keys,
``x-tenant-id`` (HTTP header or gRPC metadata) must name the key's tenant.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import threading
import time
from collections import deque
from dataclasses import dataclass

from mcp.config.serving import Tenant
from mcp.serving.errors import AuthenticationError, FieldError, PermissionDeniedError, RateLimitedError

WINDOW_S = 60.0
OPEN_TENANT = Tenant("default", (), "admin")
TENANT_ID_HEADER = "x-tenant-id"
TENANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
TENANT_ID_SHAPE = "letters, digits and . _ @ - (at most 64)"


def hash_key(key: str) -> str:
    """What ``serving.tenants[].key_sha256`` holds for ``key``."""
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Caller:
    """The tenant a request runs as."""

    tenant: Tenant
    authenticated: bool  # False when the server runs open

    def require_admin(self) -> None:
        if self.tenant.role != "admin":
            raise PermissionDeniedError(f"tenant {self.tenant.name!r} may not use the admin endpoints; "
                                        "use a key of a tenant with role: admin")


class TenantDirectory:
    """Finds the tenant of an ``Authorization: Bearer KEY`` header."""

    def __init__(self, tenants: tuple[Tenant, ...]) -> None:
        self._by_digest = [(digest, tenant) for tenant in tenants for digest in tenant.key_sha256]

    @property
    def open(self) -> bool:
        return not self._by_digest

    def authenticate(self, authorization: str | None, tenant_header: str | None = None) -> Caller:
        if self.open:
            name = tenant_header or OPEN_TENANT.name
            return Caller(Tenant(name, (), "admin"), authenticated=False)
        scheme, _, key = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not key.strip():
            raise AuthenticationError("no API key: send the header 'Authorization: Bearer YOUR_KEY' "
                                      "(or 'x-api-key: YOUR_KEY')")
        digest = hash_key(key.strip())
        for known, tenant in self._by_digest:  # every digest compared: the time says nothing of the key
            match = hmac.compare_digest(known, digest)
            if match:
                return Caller(tenant, authenticated=True)
        raise AuthenticationError("the API key matches no tenant of this server; check the key")

    def authenticate_as(self, authorization: str | None, tenant_id: str | None, where: str = "header") -> Caller:
        """``authenticate`` with an ``x-tenant-id`` claim, the same for HTTP and gRPC: on an open
        server it names the tenant; with keys it must be the key's tenant (else 403 /
        PERMISSION_DENIED). ``where`` says how the error names it: "header" or "metadata"."""
        if tenant_id is not None and not TENANT_ID.fullmatch(tenant_id):
            raise FieldError(f"{where} {TENANT_ID_HEADER} {tenant_id[:80]!r} is malformed; it takes {TENANT_ID_SHAPE}",
                             TENANT_ID_HEADER)
        caller = self.authenticate(authorization, tenant_id)
        if tenant_id is not None and caller.authenticated and tenant_id != caller.tenant.name:
            raise PermissionDeniedError(f"{TENANT_ID_HEADER} {tenant_id!r} does not match the API key's tenant "
                                        f"{caller.tenant.name!r}; leave the {where} out or send that tenant's key")
        return caller


@dataclass(frozen=True)
class TenantUsage:
    """One tenant's last minute as the limiter counts it (the console's tenants page)."""

    tenant: str
    num_requests: int  # admitted in the last 60 s
    num_tokens: int  # prompt + completion tokens of requests finished in the last 60 s
    num_refused: int  # 429s for its limits since the server started


class RateLimiter:
    """Requests and tokens per minute per tenant, over a sliding 60 s window."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._requests: dict[str, deque[float]] = {}
        self._tokens: dict[str, deque[tuple[float, int]]] = {}
        self._refused: dict[str, int] = {}

    def admit(self, tenant: Tenant) -> None:
        """Count one request, or raise RateLimitedError with the seconds until one fits."""
        now = self._clock()
        with self._lock:
            requests = _trimmed(self._requests.setdefault(tenant.name, deque()), now)
            tokens = _trimmed(self._tokens.setdefault(tenant.name, deque()), now)
            if tenant.requests_per_minute is not None and len(requests) >= tenant.requests_per_minute:
                wait = requests[0] + WINDOW_S - now
                self._refused[tenant.name] = self._refused.get(tenant.name, 0) + 1
                raise RateLimitedError(f"tenant {tenant.name!r} is over its {tenant.requests_per_minute} requests "
                                       f"per minute; retry in {wait:.0f} s", wait)
            used = sum(count for _, count in tokens)
            if tenant.tokens_per_minute is not None and used >= tenant.tokens_per_minute:
                wait = tokens[0][0] + WINDOW_S - now
                self._refused[tenant.name] = self._refused.get(tenant.name, 0) + 1
                raise RateLimitedError(f"tenant {tenant.name!r} used {used} of its {tenant.tokens_per_minute} "
                                       f"tokens per minute; retry in {wait:.0f} s", wait)
            requests.append(now)

    def record_tokens(self, tenant: Tenant, num_tokens: int) -> None:
        """Tokens a finished request used (prompt and completion); counted for every tenant, so
        that the console shows usage where no limit is set."""
        if num_tokens <= 0:
            return
        with self._lock:
            self._tokens.setdefault(tenant.name, deque()).append((self._clock(), num_tokens))

    def usage(self, tenant_name: str) -> TenantUsage:
        """What ``tenant_name`` used in the last minute, and its refusals so far."""
        now = self._clock()
        with self._lock:
            requests = _trimmed(self._requests.get(tenant_name, deque()), now)
            tokens = _trimmed(self._tokens.get(tenant_name, deque()), now)
            return TenantUsage(tenant_name, len(requests), sum(count for _, count in tokens),
                               self._refused.get(tenant_name, 0))


def _trimmed(window: deque, now: float) -> deque:
    while window and (window[0] if isinstance(window[0], float) else window[0][0]) <= now - WINDOW_S:
        window.popleft()
    return window
