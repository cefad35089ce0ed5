"""The Responses API's published request fields, and what this server does with each (data, not code).

Source: ``openai.types.responses.response_create_params.ResponseCreateParamsBase`` (and its
``stream``) of the ``openai`` Python library 3.63.0, December 2026, generated from OpenAI's
published OpenAPI schema. As on chat completions (``fields.py``): a field in ``FIELDS`` is
accepted; one in ``IGNORED`` has no effect here and is named in ``x-mcp-ignored-fields``; one
in ``STATEFUL`` asks the server to keep or fetch state, which this stateless server does not,
so a value other than empty/false is a 400 saying so; a field in no list is a 400 naming it.
"""

from __future__ import annotations

SOURCE = "openai-python 3.63.0 (ResponseCreateParamsBase)"

FIELDS = frozenset({
    "access_programs", "background", "background_options", "context_management", "conversation", "image",
    "include", "input", "instructions", "max_output_tokens", "max_tool_calls", "metadata", "model", "moderation",
    "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key", "prompt_cache_options",
    "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier", "store", "stream",
    "stream_options", "temperature", "text", "tool_choice", "tools", "top_logprobs", "top_p", "truncation",
    "user"})

# Refused unless empty or false: each needs responses, conversations or prompts kept on the server.
STATEFUL = frozenset({"background", "conversation", "previous_response_id", "prompt", "store"})

# Accepted with no effect here: hosted-service features (tiers, moderation, prompt-cache keys:
# our prefix cache needs no key), output extras (include, logprobs), reasoning knobs of
# reasoning models, and limits this engine enforces its own way (truncation: a prompt over the
# context is a 400; max_tool_calls: one answer has at most the calls the model writes).
IGNORED = frozenset({
    "access_programs", "background_options", "context_management", "image", "include", "max_tool_calls",
    "moderation", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "reasoning",
    "safety_identifier", "service_tier", "stream_options", "top_logprobs", "truncation"})

# Extensions beyond OpenAI's schema (vLLM's sampling names), accepted on top.
EXTENSIONS = frozenset({"top_k", "min_p", "repetition_penalty", "seed"})

# Function tool fields that describe hosted behaviour (deferred loading, programmatic callers,
# async calls, an output schema): accepted, no effect here.
TOOL_IGNORED = frozenset({"allowed_callers", "async", "defer_loading", "output_schema"})
