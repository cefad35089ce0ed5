"""API keys (hashed, Bearer), roles, and per-tenant requests/tokens per minute."""

from __future__ import annotations

import pytest

from mcp.config.serving import Tenant
from mcp.serving.errors import AuthenticationError, FieldError, PermissionDeniedError, RateLimitedError
from mcp.serving.tenants import RateLimiter, TenantDirectory, hash_key

ACME = Tenant("acme", (hash_key("k-acme"),), "user", requests_per_minute=2, tokens_per_minute=100)
OPS = Tenant("ops", (hash_key("k-ops"), hash_key("k-ops-2")), "admin")


def test_bearer_keys_find_their_tenant():
    directory = TenantDirectory((ACME, OPS))
    assert directory.authenticate("Bearer k-acme").tenant is ACME
    assert directory.authenticate("bearer k-ops-2", "someone-else").tenant is OPS  # x-tenant cannot override
    for header in (None, "", "Bearer ", "Basic k-acme", "Bearer k-wrong", "k-acme"):
        with pytest.raises(AuthenticationError):
            directory.authenticate(header)
    with pytest.raises(PermissionDeniedError, match="admin"):
        directory.authenticate("Bearer k-acme").require_admin()
    directory.authenticate("Bearer k-ops").require_admin()


def test_a_tenant_id_claim_names_the_tenant_when_open_and_must_match_the_key_otherwise():
    keyed, open_ = TenantDirectory((ACME, OPS)), TenantDirectory(())
    assert open_.authenticate_as(None, "team-b").tenant.name == "team-b"
    assert keyed.authenticate_as("Bearer k-acme", "acme").tenant is ACME
    assert keyed.authenticate_as("Bearer k-acme", None).tenant is ACME
    with pytest.raises(PermissionDeniedError, match="x-tenant-id 'ops' does not match the API key's tenant 'acme'"):
        keyed.authenticate_as("Bearer k-acme", "ops")
    with pytest.raises(FieldError, match="metadata x-tenant-id 'a b' is malformed"):
        open_.authenticate_as(None, "a b", "metadata")
    with pytest.raises(AuthenticationError):  # a claim is no key
        keyed.authenticate_as(None, "acme")


def test_open_server_takes_everyone_as_admin():
    directory = TenantDirectory(())
    caller = directory.authenticate(None, "team-b")
    assert directory.open and caller.tenant.name == "team-b" and not caller.authenticated
    caller.require_admin()
    assert directory.authenticate("Bearer anything").tenant.name == "default"


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_requests_and_tokens_per_minute_slide():
    clock = Clock()
    limiter = RateLimiter(clock)
    limiter.admit(ACME)
    clock.now = 10.0
    limiter.admit(ACME)
    with pytest.raises(RateLimitedError, match="2 requests per minute") as caught:
        limiter.admit(ACME)
    assert caught.value.retry_after_s == pytest.approx(50.0)
    clock.now = 60.5  # the first request left the window
    limiter.admit(ACME)
    limiter.record_tokens(ACME, 100)
    clock.now = 75.0  # the second request left: requests fit, tokens do not
    with pytest.raises(RateLimitedError, match="used 100 of its 100 tokens"):
        limiter.admit(ACME)
    limiter.admit(OPS)  # no limits
