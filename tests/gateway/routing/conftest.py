"""A routing file in the brief's form, extended with every kind of rule."""

from __future__ import annotations

import pytest

ROUTING_YAML = """
version: 1
routes:
  - name: customer-support-v2
    conditions:
      user_tier: [premium]
      max_input_tokens: 512
    backend:
      model_id: qwen2-7b-chat:v2.4
      instance_pool: gpu-a10-pool
      timeout_ms: 8000
  - name: acme-long-context
    conditions:
      tenant: acme
      min_input_tokens: 2048
      sla_class: [critical, high]
    backend: {model_id: "llama-long@production", instance_pool: long-pool}
    fallbacks:
      - when: [timeout, over_capacity]
        backend: {model_id: "llama-long:1", instance_pool: spare-pool, timeout_ms: 20000}
  - name: eu-traffic
    conditions:
      headers: {X-Region: "eu-*"}
      metadata: {team: [search, ads]}
    backend: {model_id: "eu-model:3", instance_pool: eu-pool}
  - name: support-canary
    conditions:
      model: support-bot
    split:
      arms:
        - {name: stable, weight: 95, backend: {model_id: "support-bot@production", instance_pool: a}}
        - {name: canary, weight: 5, backend: {model_id: "support-bot@canary", instance_pool: b}}
    fallbacks:
      - backend: {model_id: "support-bot:1", instance_pool: a}
default:
  backend: {model_id: "smollm2:1", instance_pool: cpu-pool, timeout_ms: 30000}
"""


@pytest.fixture
def routing_yaml() -> str:
    return ROUTING_YAML
