"""``GovernancePlane``: what the serving layer calls around every inference, HTTP or gRPC.

    inference = await plane.admit(InferenceRequest(...))   # detectors + input policy, before scheduling
    model = inference.model or requested                    # a reroute names another model
    texts = inference.prompt_texts                          # redacted when a rule said so
    guard = inference.output_guard()                        # one per choice: feed(chunk) -> text to send
    inference.redactions()                                  # spans replaced so far, by stage and kind
    await inference.finish(InferenceOutcome(...))           # the audit record, committed; the span, ended

``admit`` raises ``PolicyDeniedByRule`` (HTTP 403 / gRPC PERMISSION_DENIED) after recording the
refusal. Nothing here knows of HTTP: callers pass plain values (tenant, model, prompt texts,
``traceparent`` as a dict).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import anyio.to_thread

from mcp.base.errors import MCPError
from mcp.config.serving import GovernanceConfig
from mcp.governance.audit.chain import canonical_json
from mcp.governance.audit.log import AuditEntry, AuditLog, Capture
from mcp.governance.audit.maintenance import RetentionKeeper
from mcp.governance.detectors.scanner import Finding, Scanner, redaction
from mcp.governance.errors import PolicyDeniedByRule
from mcp.governance.guard import OutputGuard
from mcp.governance.metrics import GovernanceMetrics
from mcp.governance.policy.bundle import SHIPPED
from mcp.governance.policy.decision import Decision
from mcp.governance.policy.engine import PolicyEngine, RegoPolicyEngine
from mcp.governance.policy.opa_rest import OPAPolicyEngine
from mcp.governance.redactions import Redactions
from mcp.governance.tracing.spans import InferenceTracer, trace_id_of

log = logging.getLogger(__name__)
INLINE_CHARS = 8192  # prompts up to this many characters are checked on the event loop, longer ones in a thread


@dataclass(frozen=True)
class InferenceRequest:
    request_id: str
    route: str  # e.g. "POST /v1/chat/completions", "grpc Generate"
    operation: str  # GenAI operation: chat | text_completion
    tenant: str
    model: str | None  # as requested (None: the default)
    prompt_texts: tuple[str, ...]  # message contents or prompts, in order
    max_tokens: int
    user: str | None = None  # the caller's end user, if it says (pseudonymized before use)
    carrier: dict[str, str] = field(default_factory=dict)  # traceparent / tracestate
    attributes: dict[str, Any] = field(default_factory=dict)  # gen_ai.request.* for the span
    metadata: dict[str, str] = field(default_factory=dict)  # the client's tags, kept in the audit record


@dataclass(frozen=True)
class InferenceOutcome:
    status: str  # ok | stopped | cancelled | error:<kind>
    model_key: str | None = None  # name:version that ran
    outputs: tuple[str, ...] = ()  # what the client got, per choice
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reasons: tuple[str, ...] = ()
    ttft_s: float | None = None
    total_s: float | None = None
    queue_s: float | None = None  # of the TTFT, waiting in the scheduler's queue


class GovernancePlane:
    def __init__(self, policy: PolicyEngine, scanner: Scanner, tracer: InferenceTracer,
                 audit: AuditLog | None = None, capture: bool = False, window_chars: int = 64) -> None:
        self.policy, self.scanner, self.tracer, self.audit = policy, scanner, tracer, audit
        self.capture, self.window_chars = capture, window_chars
        self._retention: RetentionKeeper | None = None
        self.metrics: GovernanceMetrics | None = None  # set by register_metrics

    def register_metrics(self, registry) -> None:
        """Export decisions and audit writes on ``registry`` (the server's /metrics)."""
        self.metrics = GovernanceMetrics(registry)

    @classmethod
    def from_config(cls, config: GovernanceConfig, service_name: str) -> GovernancePlane:
        """The plane ``serving.governance`` describes: policies loaded (and watched), audit
        database migrated, exporter set up; anything wrong is an MCPError naming it."""
        if config.opa_url:
            policy: PolicyEngine = OPAPolicyEngine(config.opa_url)
        else:
            policy = RegoPolicyEngine(config.policy_bundle or SHIPPED, config.policy_poll_s).start()
        audit = None
        if config.audit:
            audit = AuditLog.open(config.audit_url, config.audit_key_file, config.audit_sqlite_sync)
        plane = cls(policy, Scanner(config.terms), InferenceTracer(service_name, config.otlp_endpoint), audit,
                    config.capture, config.stream_window_chars)
        if audit is not None and config.retention_days is not None:
            plane._retention = RetentionKeeper(audit, config.retention_days).start()
        log.info("governance: policy %s (version %s), audit %s, capture %s, traces %s",
                 config.opa_url or config.policy_bundle or "shipped", policy.version[:12],
                 audit.engine.url.render_as_string(hide_password=True) if audit else "off",
                 "on" if config.capture else "off", config.otlp_endpoint or "not exported")
        return plane

    async def admit(self, request: InferenceRequest) -> Inference:
        """Detect, decide, and either refuse (recorded, then raised) or hand back the inference."""
        started_ns = time.time_ns()
        subject = (self.audit.keys.pseudonym(request.tenant, request.user)
                   if self.audit is not None and request.user else None)
        span = self.tracer.start(request.operation, request.model, request.carrier, {
            **request.attributes, "gen_ai.request.model": request.model, "llm.model.name": request.model,
            "llm.prompt.hash": _sha256("\n".join(request.prompt_texts)),
            "gen_ai.request.max_tokens": request.max_tokens})
        try:
            findings, decision = await self._checked_input(request, subject)
        except MCPError as exc:  # the policy failed: refuse, and say so in the record and the span
            failed = Inference(self, request, subject, span, Decision("input", self.policy.version), [], started_ns)
            await failed.finish(InferenceOutcome(status="error:policy"), error_type=type(exc).__name__)
            raise
        self.tracer.child(span, "policy input", started_ns, time.time_ns(),
                          {"mcp.policy.action": decision.action, "mcp.policy.version": decision.policy_version,
                           "mcp.policy.rules": list(decision.as_record()["rules"]),
                           "mcp.findings": sorted({f.kind for f in findings})})
        inference = Inference(self, request, subject, span, decision, findings, started_ns)
        if self.metrics is not None:
            self.metrics.decided(decision)
        if decision.deny:
            hit = decision.deny[0]
            await inference.finish(InferenceOutcome(status="denied"), error_type="policy_denied")
            raise PolicyDeniedByRule(hit.rule, hit.reason)
        return inference

    async def _checked_input(self, request: InferenceRequest, subject: str | None) -> tuple[list[Finding], Decision]:
        if sum(map(len, request.prompt_texts)) <= INLINE_CHARS:  # about a millisecond: cheaper than a thread hop
            return self._check_input(request, subject)
        return await anyio.to_thread.run_sync(self._check_input, request, subject)

    def _check_input(self, request: InferenceRequest, subject: str | None) -> tuple[list[Finding], Decision]:
        findings, offset = [], 0
        for text in request.prompt_texts:
            findings += self.scanner.scan(text, offset)
            offset += len(text) + 1
        document = {"stage": "input", "request": {"id": request.request_id, "operation": request.operation,
                                                  "max_tokens": request.max_tokens,
                                                  "num_chars": sum(map(len, request.prompt_texts))},
                    "tenant": {"name": request.tenant}, "user": subject, "model": {"requested": request.model or ""},
                    "findings": policy_findings(findings)}
        return findings, self.policy.evaluate("input", document)

    def close(self) -> None:
        if self._retention is not None:
            self._retention.stop()
        self.policy.close()
        if self.audit is not None:
            self.audit.close()
        self.tracer.shutdown()


class Inference:
    """One admitted request: its input decision, its span, its output checks, its record."""

    def __init__(self, plane: GovernancePlane, request: InferenceRequest, subject: str | None, span, decision: Decision,
                 findings: list[Finding], started_ns: int) -> None:
        self.plane, self.request, self.subject, self.span = plane, request, subject, span
        self.input_decision, self.findings, self.started_ns = decision, findings, started_ns
        self.trace_id = trace_id_of(span)
        self.guards: list[OutputGuard] = []
        self._output_decisions: dict[frozenset, Decision] = {}
        self._finished = False

    @property
    def model(self) -> str | None:
        """The model a reroute names, else None (run what was asked for)."""
        return self.input_decision.reroute_model

    @property
    def prompt_texts(self) -> tuple[str, ...]:
        """The prompt texts, with the spans an input redact rule named replaced."""
        return self._redacted_input[0]

    @cached_property
    def _redacted_input(self) -> tuple[tuple[str, ...], tuple[Finding, ...]]:
        """The prompt texts as the model gets them, and the findings whose spans were replaced."""
        kinds = self.input_decision.redact_kinds
        if not kinds:
            return self.request.prompt_texts, ()
        texts, replaced, offset = [], [], 0
        for text in self.request.prompt_texts:
            redacted, found = redaction(text, self.findings, kinds, offset)
            texts.append(redacted)
            replaced += found
            offset += len(text) + 1
        return tuple(texts), tuple(replaced)

    def redactions(self) -> Redactions:
        """The spans replaced so far: in the prompt, and in what every choice has sent."""
        return Redactions.of(self._redacted_input[1], (f for guard in self.guards for f in guard.redacted))

    def output_guard(self) -> OutputGuard:
        guard = OutputGuard(self.plane.scanner, self._decide_output, self.plane.window_chars)
        self.guards.append(guard)
        return guard

    def _decide_output(self, findings: list[Finding]) -> Decision:
        key = frozenset((f.kind, f.category) for f in findings)
        if key not in self._output_decisions:
            request = {"id": self.request.request_id, "operation": self.request.operation}
            document = {"stage": "output", "request": request,
                        "tenant": {"name": self.request.tenant}, "user": self.subject,
                        "model": {"requested": self.request.model or ""},
                        "findings": policy_findings(findings)}
            decision = self._output_decisions[key] = self.plane.policy.evaluate("output", document)
            if self.plane.metrics is not None:
                self.plane.metrics.decided(decision)
        return self._output_decisions[key]

    async def finish(self, outcome: InferenceOutcome, error_type: str | None = None) -> None:
        """Write the audit record (returns once committed) and end the span. Once."""
        if self._finished:
            return
        self._finished = True
        self._end_span(outcome, error_type)
        if self.plane.audit is None:
            return
        entry, capture = self._record(outcome)
        submitted = time.perf_counter()
        await self.plane.audit.append_async(entry, capture)
        if self.plane.metrics is not None:
            self.plane.metrics.audit_lag.observe(time.perf_counter() - submitted)
            self.plane.metrics.audit_records.labels(outcome.status).inc()

    def finish_soon(self, outcome: InferenceOutcome) -> None:
        """The same, without waiting for the commit (a request whose client already left)."""
        if self._finished:
            return
        self._finished = True
        self._end_span(outcome, None)
        if self.plane.audit is not None:
            self.plane.audit.submit(*self._record(outcome))
            if self.plane.metrics is not None:
                self.plane.metrics.audit_records.labels(outcome.status).inc()

    def _record(self, outcome: InferenceOutcome) -> tuple[AuditEntry, Capture | None]:
        decisions = [self.input_decision.as_record()]
        decisions += [d.as_record() for d in self._output_decisions.values() if d.action != "allow"]
        name, _, version = (outcome.model_key or "").partition(":")
        entry = AuditEntry(
            request_id=self.request.request_id, tenant=self.request.tenant, route=self.request.route,
            prompt_sha256=_sha256("\n".join(self.request.prompt_texts)), status=outcome.status,
            decisions=tuple(decisions), trace_id=self.trace_id, subject=self.subject, model=name or self.request.model,
            model_version=version or None,
            output_sha256=_sha256("\x1e".join(outcome.outputs)) if outcome.outputs else None,
            prompt_tokens=outcome.prompt_tokens, completion_tokens=outcome.completion_tokens,
            latency_us=(time.time_ns() - self.started_ns) // 1000,
            request_metadata=canonical_json(self.request.metadata) if self.request.metadata else None)
        capture = None
        if self.plane.capture and self.subject is not None:
            capture = Capture("\n".join(self.request.prompt_texts), "\x1e".join(outcome.outputs) or None)
        return entry, capture

    def _end_span(self, outcome: InferenceOutcome, error_type: str | None) -> None:
        tracer, now_ns = self.plane.tracer, time.time_ns()
        if outcome.ttft_s is not None and outcome.total_s is not None:
            submitted_ns = now_ns - int(outcome.total_s * 1e9)
            first_ns = submitted_ns + int(outcome.ttft_s * 1e9)
            scheduled_ns = submitted_ns + int((outcome.queue_s or 0.0) * 1e9)
            tracer.child(self.span, "queue", submitted_ns, scheduled_ns)
            tracer.child(self.span, "prefill", scheduled_ns, first_ns)
            tracer.child(self.span, "decode", first_ns, now_ns)
        check_ns = sum(g.check_ns for g in self.guards)
        if self.guards:
            tracer.child(self.span, "policy output", now_ns - check_ns, now_ns,
                         {"mcp.policy.action": "deny" if any(g.stopped for g in self.guards) else "allow"})
        name, _, _ = (outcome.model_key or "").partition(":")
        tracer.end(self.span, {"gen_ai.response.id": self.request.request_id,
                               "gen_ai.response.model": outcome.model_key,
                               "gen_ai.usage.input_tokens": outcome.prompt_tokens,
                               "gen_ai.usage.output_tokens": outcome.completion_tokens,
                               "gen_ai.response.finish_reasons": list(outcome.finish_reasons) or None,
                               "mcp.status": outcome.status, "llm.model.name": name or self.request.model},
                   error_type or (outcome.status.partition(":")[2] or None))


def policy_findings(findings: list[Finding]) -> list[dict]:
    """The findings as a policy gets them: one per distinct value (kind and digest), at its first
    place, with ``count`` occurrences. A prompt repeating one address 40 times is one finding:
    the evaluation's cost follows the number of findings."""
    distinct: dict[tuple[str, str], dict] = {}
    for finding in findings:
        key = (finding.kind, finding.digest)
        if key in distinct:
            distinct[key]["count"] += 1
        else:
            distinct[key] = {**finding.as_input(), "count": 1}
    return list(distinct.values())


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()

