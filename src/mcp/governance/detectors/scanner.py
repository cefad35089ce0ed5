"""``Scanner``: one pass over a text, every finding with its kind and span, no raw value."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
from dataclasses import dataclass

from mcp.base.errors import ConfigError
from mcp.governance.detectors import checksums
from mcp.governance.detectors.patterns import KINDS, check_terms, compile_scanner_pattern

_NANP = re.compile(r"^(?:\+?1[ .-]?)?\(?[2-9]\d{2}\)?[ .-]?[2-9]\d{2}[ .-]\d{4}$")
_SSN = re.compile(r"^(\d{3})-(\d{2})-(\d{4})$")
_CN_MOBILE = re.compile(r"^(?:\+?86[ -]?)?1[3-9]\d(?:[ -]?\d{4}){2}$")
_SECRET_KINDS = frozenset(name for name, kind in KINDS.items() if kind.category == "secret")


@dataclass(frozen=True)
class Finding:
    """One thing found: ``text[start:end]`` is a ``kind``; ``digest`` is a keyed hash of the value
    (the same value gives the same digest under one key, so repeats can be told apart) and
    ``masked`` a form safe to log."""

    kind: str
    category: str
    start: int
    end: int
    digest: str
    masked: str

    def as_input(self) -> dict:
        """The finding as a policy sees it (``input.findings[i]``)."""
        return {"kind": self.kind, "category": self.category, "start": self.start, "end": self.end,
                "digest": self.digest, "masked": self.masked}


class Scanner:
    """Finds PII, secrets, prompt-injection markers and listed ``terms`` in a text.

    ``key`` keys the findings' digests (random per process unless given: a digest is then
    comparable only within one server's lifetime).
    """

    def __init__(self, terms: tuple[str, ...] = (), key: bytes | None = None) -> None:
        self.terms = tuple(t.strip() for t in terms if t.strip())
        if problems := check_terms(self.terms):
            raise ConfigError("detector terms: " + "; ".join(problems))
        self._pattern = compile_scanner_pattern(self.terms)
        self._key = key or os.urandom(32)

    def scan(self, text: str, offset: int = 0) -> list[Finding]:
        """Every finding in ``text``, in order; spans are shifted by ``offset``."""
        findings = []
        for match in self._pattern.finditer(text):
            kind = _classify(match.lastgroup or "", match.group())
            if kind is not None:
                findings.append(self._finding(kind, match.group(), match.start() + offset, match.end() + offset))
        return findings

    def _finding(self, kind: str, value: str, start: int, end: int) -> Finding:
        digest = hmac.new(self._key, value.encode(), hashlib.sha256).hexdigest()[:16]
        return Finding(kind, KINDS[kind].category, start, end, digest, mask(kind, value))


def _classify(group: str, value: str) -> str | None:
    """The kind a match is, after its checks; None for a look-alike."""
    if group == "number":
        return classify_number(value)
    if group == "prompt_injection_token":
        return "prompt_injection"
    if group == "iban":
        return "iban" if checksums.iban_ok(value.replace(" ", "")) else None
    if group == "jwt":
        return "jwt" if _jwt_header_ok(value) else None
    if group == "api_key_assignment":
        secret = re.split(r"[:=]\s*[\"']?", value, maxsplit=1)[-1]
        return group if _looks_random(secret) else None
    return group


def classify_number(value: str) -> str | None:
    """A run of digits as a China resident ID, a payment card, a US SSN or a phone number."""
    digits = "".join(char for char in value if char.isdigit() or char in "Xx")
    if checksums.cn_resident_id_ok(digits):
        return "cn_resident_id"
    if digits.isdigit() and checksums.card_ok(digits) and not value.startswith(("+", "(")):
        return "payment_card"
    if (ssn := _SSN.match(value)) is not None:
        return "us_ssn" if checksums.us_ssn_ok(*ssn.groups()) else None
    if _NANP.match(value) or _CN_MOBILE.match(value) or _international_phone(value, digits):
        return "phone"
    return None


def _international_phone(value: str, digits: str) -> bool:
    return value.startswith("+") and digits.isdigit() and 8 <= len(digits) <= 15 and digits[0] != "0"


def _jwt_header_ok(value: str) -> bool:
    header = value.split(".", 1)[0]
    try:
        decoded = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
    except ValueError:
        return False
    return isinstance(decoded, dict) and "alg" in decoded


def _looks_random(secret: str) -> bool:
    """A value, not a word: letters and digits mixed (``password = hunter2hunter2`` is not a key,
    ``password = s3cr3tP4ssw0rd!`` is)."""
    return any(c.isdigit() for c in secret) and any(c.isalpha() for c in secret) and len(set(secret)) >= 6


def mask(kind: str, value: str) -> str:
    """A form of ``value`` safe for logs: the kind's prefix or the last digits, never the whole."""
    if kind in _SECRET_KINDS:
        return value[:4] + "*" if kind in ("aws_access_key", "github_token", "slack_token", "gcp_api_key") else "*"
    if kind == "email":
        local, _, domain = value.partition("@")
        return f"{local[0]}*@*{domain[domain.rfind('.'):]}"
    if kind in ("payment_card", "phone", "iban"):
        digits = [c for c in value if c.isalnum()]
        return "*" + "".join(digits[-4:])
    return "*"


def redact(text: str, findings: list[Finding], kinds: frozenset[str], offset: int = 0) -> str:
    """``text`` with the spans of the findings of ``kinds`` replaced by ``[REDACTED:kind]``;
    spans are shifted back by ``offset`` (the position of ``text`` in what was scanned)."""
    return redaction(text, findings, kinds, offset)[0]


def redaction(text: str, findings: list[Finding], kinds: frozenset[str],
              offset: int = 0) -> tuple[str, tuple[Finding, ...]]:
    """``redact``'s text, and the findings whose spans it replaced (what the API reports: a
    finding outside ``text`` or overlapping one replaced before it is not counted)."""
    parts, replaced, position = [], [], 0
    for finding in findings:
        if finding.kind not in kinds:
            continue
        start, end = finding.start - offset, finding.end - offset
        if start < position or start < 0 or end > len(text):
            continue
        parts += [text[position:start], f"[REDACTED:{finding.kind}]"]
        replaced.append(finding)
        position = end
    return "".join(parts) + text[position:], tuple(replaced)
