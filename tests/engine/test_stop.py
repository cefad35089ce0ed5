"""Stop strings over streamed deltas: nothing of a stop string leaks, nothing else is lost."""

from __future__ import annotations

import pytest

from mcp.engine.stop import StopChecker


def run(stop: list[str], deltas: list[str]) -> tuple[list[tuple[str, bool]], str, str | None]:
    checker = StopChecker(stop)
    results = [checker.feed(delta) for delta in deltas]
    return results, checker.flush(), checker.matched


def emitted(results: list[tuple[str, bool]]) -> str:
    return "".join(text for text, _ in results)


def test_stop_inside_one_delta() -> None:
    results, rest, matched = run(["END"], ["Hello ENDworld"])
    assert results == [("Hello ", True)]
    assert (rest, matched) == ("", "END")


def test_stop_split_across_two_deltas() -> None:
    results, rest, matched = run(["END"], ["Hello E", "ND and more"])
    assert results == [("Hello ", False), ("", True)]
    assert (rest, matched) == ("", "END")


def test_stop_split_across_three_deltas() -> None:
    results, _, matched = run(["<|im_end|>"], ["ok<|", "im_", "end|>tail"])
    assert results == [("ok", False), ("", False), ("", True)]
    assert matched == "<|im_end|>"


def test_feeds_after_stop_return_nothing() -> None:
    checker = StopChecker(["x"])
    assert checker.feed("abxcd") == ("ab", True)
    assert checker.feed("more") == ("", True)
    assert checker.flush() == ""
    assert checker.stopped and checker.matched == "x"


def test_overlapping_candidates() -> None:
    results, _, matched = run(["ab", "bc"], ["xa", "c"])  # "a" held for "ab", then released
    assert results == [("x", False), ("ac", False)]
    results, _, matched = run(["ab", "bc"], ["x", "b", "c"])  # "b" held for "bc"
    assert results == [("x", False), ("", False), ("", True)]
    assert matched == "bc"
    results, _, matched = run(["ab", "bc"], ["a", "bc"])  # "ab" completes first
    assert results == [("", False), ("", True)]
    assert matched == "ab"


def test_held_prefix_that_is_not_a_stop_is_released() -> None:
    results, rest, matched = run(["</answer>"], ["The </ans", "wer is", " here"])
    assert results == [("The ", False), ("</answer is", False), (" here", False)]
    assert (rest, matched) == ("", None)


def test_held_text_is_returned_by_flush() -> None:
    results, rest, matched = run(["STOP"], ["go ST"])
    assert results == [("go ", False)]
    assert (rest, matched) == ("ST", None)


def test_earliest_occurrence_wins() -> None:
    results, _, matched = run(["world", "lo"], ["hello world"])
    assert results == [("hel", True)]
    assert matched == "lo"
    results, _, matched = run(["lo", "world"], ["say world, hello"])
    assert results == [("say ", True)]
    assert matched == "world"


def test_first_completed_stop_wins_however_the_text_is_split() -> None:
    # "b" completes before "abc" can: the same answer for one delta and for one char at a time.
    for deltas in (["xabc"], list("xabc")):
        results, _, matched = run(["abc", "b"], deltas)
        assert emitted(results) == "xa" and matched == "b"
    # Two stops ending at the same character: the longer one, which starts earlier.
    for deltas in (["xabc"], list("xabc")):
        results, _, matched = run(["bc", "abc"], deltas)
        assert emitted(results) == "x" and matched == "abc"


@pytest.mark.parametrize(
    ("stop", "deltas", "before"),
    [
        (["结束"], ["你好", "世界结", "束了"], "你好世界"),
        (["🛑"], ["go go ", "🛑 halt"], "go go "),
        (["👍🏽"], ["ok 👍", "🏽!"], "ok "),
    ],
)
def test_unicode_stops(stop: list[str], deltas: list[str], before: str) -> None:
    results, rest, matched = run(stop, deltas)
    assert emitted(results) == before
    assert results[-1][1] is True
    assert (rest, matched) == ("", stop[0])


def test_unicode_prefix_released_when_not_a_stop() -> None:
    results, rest, _ = run(["👍🏽"], ["ok 👍", " fine"])
    assert results == [("ok ", False), ("👍 fine", False)]
    assert rest == ""


def test_no_stops_passes_everything_through() -> None:
    results, rest, matched = run([], ["a", "bc", "", "def"])
    assert results == [("a", False), ("bc", False), ("", False), ("def", False)]
    assert (rest, matched) == ("", None)


@pytest.mark.parametrize(
    "deltas",
    [
        ["Once upon", " a ti", "me <", "|e", "nd", " of story", " <|en"],
        list("abcab<|enab<|e"),
        ["<", "|", "end", "|", ">"],  # "<|end|>" is not "<|end|x" nor the stop below
    ],
)
def test_emitted_plus_flush_is_the_input_when_no_stop(deltas: list[str]) -> None:
    results, rest, matched = run(["<|endoftext|>", "<|end|x"], deltas)
    assert matched is None
    assert not any(stopped for _, stopped in results)
    assert emitted(results) + rest == "".join(deltas)


def test_empty_stop_string_is_rejected() -> None:
    with pytest.raises(ValueError, match="stop strings must be non-empty"):
        StopChecker(["ok", ""])
