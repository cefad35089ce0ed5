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
# Hashed only when set: records written before the field existed keep the hash they were given.
OPTIONAL_HASHED_FIELDS = ("request_metadata",)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def record_hash(prev_hash: str, fields: dict[str, Any]) -> str:
    hashed = {name: fields[name] for name in HASHED_FIELDS}
    hashed.update({name: fields[name] for name in OPTIONAL_HASHED_FIELDS if fields.get(name) is not None})
    body = canonical_json(hashed)
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()
