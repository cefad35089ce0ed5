"""schemathesis against our own /openapi.json: generated requests (valid and not) never get a 5xx,
and every response matches the documented status codes, content types and schemas."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def api_schema(start_server, tiny_mcp):
    server = start_server({"runtime": {"device": "cpu", "num_threads": 1},
                           "serving": {"models": [{"name": "tiny", "source": str(tiny_mcp)}],
                                       "limits": {"max_tokens": 8, "max_n": 2, "max_prompt_chars": 2000}}})
    return schemathesis.openapi.from_url(server.url + "/openapi.json").include(path_regex="^/(v1|health|ready)")


def test_no_server_error_and_responses_match_the_schema(api_schema):
    # Driven by hand (not schemathesis' pytest plugin, whose fixture loader fails on this pytest).
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) == 5  # /v1/models, chat, completions, /health, /ready
    for operation in operations:
        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=operation.as_strategy())
        def check(case) -> None:
            case.call_and_validate(checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                                           response_schema_conformance])

        check()


@pytest.mark.parametrize("path, body", [
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "stream": True, "max_tokens": 3}),
    ("/v1/completions", {"prompt": "Hi", "stream": True, "max_tokens": 3,
                         "stream_options": {"include_usage": True}}),
])
def test_streamed_events_match_the_documented_event_schema(api_schema, path, body):
    # Random generation reaches a streamed 200 only now and then; these cases always do, so each
    # server-sent event is checked against the documented per-event schema on every run.
    operation = api_schema[path]["POST"]
    case = operation.Case(body={"model": "tiny", **body}, media_type="application/json")
    response = case.call_and_validate(checks=[not_a_server_error, status_code_conformance,
                                              content_type_conformance, response_schema_conformance])
    assert response.headers["content-type"][0].startswith("text/event-stream")
    assert response.text.rstrip().endswith("data: [DONE]")
