"""Canary rollouts: ``RolloutStore`` keeps each rollout's steps, weights and analysis results in
the registry database; ``CanaryController`` walks running rollouts through their steps, gated by
``analysis.analyze`` over what the gateway observed of canary and stable (docs/governance.md)."""
