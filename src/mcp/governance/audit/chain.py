"""The hash chain: what a record's hash covers, and how it is computed.

hash = sha256(prev_hash + "\\n" + canonical JSON of the record's fields). The sequence number
is not hashed: a record's place is its link to its predecessor, so a reordering shows as a
broken link, not as an edit.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

HASHED_FIELDS = ("at_us", "request_id", "trace_id", "tenant", "subject", "model", "model_version", "route",
                 "decisions", "prompt_sha256", "output_sha256", "prompt_tokens", "completion_tokens",
                 "latency_us", "status")


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def record_hash(prev_hash: str, fields: dict[str, Any]) -> str:
    body = canonical_json({name: fields[name] for name in HASHED_FIELDS})
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()
