"""OpenAI's published request fields, and what this server does with each (data, not code).

Source: the request types of the ``openai`` Python library 3.63.0 (``openai.types.chat.
completion_create_params`` and ``openai.types.completion_create_params``, December 2026), which
are generated from OpenAI's published OpenAPI schema. A field in these lists is accepted; one in
``*_IGNORED`` has no effect here and is named in the response header ``x-mcp-ignored-fields``
(docs/api.md). A field in no list is a 400 naming it, so a typo never passes silently.
"""

from __future__ import annotations

SOURCE = "openai-python 3.63.0 (CompletionCreateParams, chat and legacy)"
IGNORED_HEADER = "x-mcp-ignored-fields"

CHAT_FIELDS = frozenset({
    "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs", "max_completion_tokens",
    "max_tokens", "messages", "metadata", "modalities", "model", "moderation", "n", "parallel_tool_calls",
    "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
    "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier", "stop", "store", "stream",
    "stream_options", "temperature", "tool_choice", "tools", "top_logprobs", "top_p", "user", "verbosity",
    "web_search_options"})
COMPLETION_FIELDS = frozenset({
    "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "model", "n",
    "presence_penalty", "prompt", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p",
    "user"})

# Accepted with no effect here: hosted-service features (storage, tiers, moderation, web search,
# prompt caching keys: our prefix cache needs no key), modalities this engine has no model for,
# and reasoning knobs of reasoning models.
CHAT_IGNORED = frozenset({
    "audio", "modalities", "moderation", "prediction", "prompt_cache_key", "prompt_cache_options",
    "prompt_cache_retention", "reasoning_effort", "safety_identifier", "service_tier", "store", "verbosity",
    "web_search_options"})
COMPLETION_IGNORED = frozenset({"best_of", "suffix"})

# Extensions beyond OpenAI's schema (vLLM's names), accepted on top.
CHAT_EXTENSIONS = frozenset({"top_k", "min_p", "repetition_penalty", "ignore_eos", "chat_template_kwargs"})
COMPLETION_EXTENSIONS = frozenset({"top_k", "min_p", "repetition_penalty", "ignore_eos", "response_format"})
