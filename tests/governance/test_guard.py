"""The output guard with the real detectors and the shipped policies: redaction of a value split
across streamed chunks, stop on a credential, and nothing of a match sent before it is checked."""

from __future__ import annotations

import pytest

from mcp.governance.detectors.scanner import Scanner
from mcp.governance.guard import OutputGuard
from mcp.governance.policy.bundle import SHIPPED
from mcp.governance.policy.engine import RegoPolicyEngine


@pytest.fixture(scope="module")
def engine() -> RegoPolicyEngine:
    return RegoPolicyEngine(SHIPPED)


def _guard(engine: RegoPolicyEngine, window: int = 64) -> OutputGuard:
    return OutputGuard(Scanner(), lambda findings: engine.evaluate(
        "output", {"findings": [f.as_input() for f in findings]}), window)


def _stream(guard: OutputGuard, chunks: list[str]) -> list[str]:
    sent = [guard.feed(chunk) for chunk in chunks]
    return [*sent, guard.flush()]


def test_an_email_split_across_chunks_is_redacted_before_any_of_it_is_sent(engine) -> None:
    guard = _guard(engine, window=16)
    sent = _stream(guard, ["Sure, write to jane.d", "oe@exam", "ple.com and ", "we will answer " * 4])
    assert "".join(sent) == "Sure, write to [REDACTED:email] and " + "we will answer " * 4
    assert not any("jane" in part or "example" in part for part in sent)
    assert guard.text == "".join(sent) and not guard.stopped


def test_a_card_number_split_across_chunks_is_redacted(engine) -> None:
    guard = _guard(engine)
    sent = _stream(guard, ["card 4111 11", "11 1111 1", "111 ok"])
    assert "".join(sent) == "card [REDACTED:payment_card] ok"
    assert [f.kind for f in guard.redacted] == ["payment_card"]  # counted once, though seen in three checks


def test_text_beyond_the_window_streams_without_waiting(engine) -> None:
    guard = _guard(engine, window=8)
    assert guard.feed("The weather is nice today in Paris.") == "The weather is nice today i"  # 8 held back
    assert guard.flush() == "n Paris."


def test_a_credential_stops_the_output(engine) -> None:
    guard = _guard(engine, window=32)
    sent = _stream(guard, ["Here is the key you asked for: -----BEGIN RSA PRI", "VATE KEY-----\nMIIEow", "more"])
    assert guard.stopped and guard.stopped_by.deny[0].rule == "output.credentials"
    assert "BEGIN" not in "".join(sent) and guard.feed("anything") == ""


def test_a_clean_text_passes_unchanged(engine) -> None:
    guard = _guard(engine)
    text = "One, two, three: the numbers 1, 2 and 3 on 2024-01-15."
    assert "".join(_stream(guard, [text[:10], text[10:]])) == text
    assert guard.redacted == []
