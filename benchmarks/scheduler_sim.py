"""The scheduler alone on a simulated clock: SLO policy (with and without pacing) vs FCFS.

Drives the real ``Scheduler`` and ``KVCacheManager`` with the load generator's seeded
workload, but no model: each step "takes" the time a step-cost law gives (defaults measured
for SmolLM2-135M on 2 CPU cores: 24 ms a step, 4 ms a decoding sequence, 1.3 ms a prefill
token), and every chunk that samples gets a token. So the policies can be compared over many
loads in seconds, deterministically, free of the machine's noise. It is a design tool: the
issue's figures are the load generator's (benchmarks/serve.py) on the real engine.

    .venv/bin/python benchmarks/scheduler_sim.py [--rates 4,5,6,8] [--num-requests 400]
        [--margin 0.25 --min-allowance 0.5] [--step-ms 24 --sequence-ms 4 --prefill-token-ms 1.3]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from mcp.base.errors import CapacityError
from mcp.engine.kv.manager import KVCacheManager
from mcp.engine.scheduler.policy import FCFSPolicy, SLOPolicy
from mcp.engine.scheduler.request import Request
from mcp.engine.scheduler.scheduler import Scheduler, SchedulerConfig, SchedulerOutput
from mcp.engine.scheduler.slo import DEFAULT_TARGETS, SLOClass
from mcp.engine.scheduler.step import PacingConfig
from mcp.ops.loadgen.mix import DEFAULT_CLASS_MIX, parse_class_mix
from mcp.ops.loadgen.workload import WorkloadSpec, build_workload

CHARS_PER_TOKEN, CHAT_TEMPLATE_TOKENS = 4, 20  # prompt length estimate: no tokenizer in the loop


@dataclass(frozen=True)
class StepLaw:
    step_s: float
    sequence_s: float
    prefill_token_s: float

    def seconds(self, output: SchedulerOutput) -> float:
        decodes = sum(chunk.num_tokens == 1 for chunk in output.chunks)
        prefill = sum(chunk.num_tokens for chunk in output.chunks if chunk.num_tokens > 1)
        return self.step_s + self.sequence_s * decodes + self.prefill_token_s * prefill


@dataclass(frozen=True)
class SimResult:
    attainment: dict[str, float]  # class -> share of its requests that met both targets
    tokens_per_s: float
    num_refused: int


def simulate(scheduler: Scheduler, spec: WorkloadSpec, law: StepLaw) -> SimResult:
    workload, now, index = build_workload(spec), 0.0, 0
    admitted, ended, refused = {}, {}, 0
    while index < len(workload) or scheduler.has_work():
        while index < len(workload) and workload[index].arrival_s <= now:
            request = _request(workload[index])
            try:
                scheduler.add(request, now)
                admitted[request.request_id] = request
            except CapacityError:
                refused += 1
            index += 1
        output = scheduler.schedule(now)
        if not output.chunks:
            now = workload[index].arrival_s if index < len(workload) else now
            continue
        seconds = law.seconds(output)
        now += seconds
        sampled = {chunk.request.request_id: 1 for chunk in output.chunks if chunk.samples}
        for request in scheduler.update(output, sampled, now, seconds):
            ended[request.request_id] = now
    classes = [SLOClass.parse(spec_.slo_class) for spec_ in workload]
    tokens = sum(len(r.output_ids) for r in admitted.values())
    return SimResult(_attainment(admitted, ended, classes), tokens / max(ended.values(), default=1.0), refused)


def _request(spec) -> Request:
    length = len(spec.prompt) // CHARS_PER_TOKEN + CHAT_TEMPLATE_TOKENS
    first = spec.index * 10_000  # distinct prompts: no prefix hits between requests
    return Request(str(spec.index), list(range(first, first + length)), spec.max_tokens,
                   SLOClass.parse(spec.slo_class), spec.tenant, spec.arrival_s)


def _attainment(admitted: dict, ended: dict, classes: list[SLOClass]) -> dict[str, float]:
    shares = {}
    for slo in SLOClass:
        target, good = DEFAULT_TARGETS[slo], 0
        for request in (r for r in admitted.values() if r.slo_class is slo):
            ttft = request.first_token_s - request.arrival_s
            num_out = len(request.output_ids)
            tpot = (ended[request.request_id] - request.first_token_s) / (num_out - 1) if num_out > 1 else 0.0
            good += ttft <= target.ttft_s and tpot <= target.tpot_s
        shares[slo.name.lower()] = good / max(classes.count(slo), 1)  # refused requests count as missed
    return shares


def _scheduler(policy: str, pacing: PacingConfig) -> Scheduler:
    kv = KVCacheManager(num_blocks=8192, block_size=16, enable_prefix_caching=True)
    return Scheduler(kv, SLOPolicy() if policy == "slo" else FCFSPolicy(), SchedulerConfig(), pacing=pacing)


def main() -> None:
    args = _parse_args()
    law = StepLaw(args.step_ms / 1000, args.sequence_ms / 1000, args.prefill_token_ms / 1000)
    systems = {"fcfs": PacingConfig(enabled=False), "slo, no pacing": PacingConfig(enabled=False),
               "slo": PacingConfig(margin=args.margin, min_allowance=args.min_allowance)}
    print(f"simulated: mixed scenario, {args.num_requests} requests, max_tokens {args.max_tokens}, {law}")
    for rate in args.rates:
        spec = WorkloadSpec(scenario="mixed", rate=rate, num_requests=args.num_requests,
                            max_tokens=args.max_tokens, seed=args.seed, class_mix=parse_class_mix(args.class_mix))
        results = {name: simulate(_scheduler(name.split(",")[0], pacing), spec, law)
                   for name, pacing in systems.items()}
        for name, result in results.items():
            shares = " ".join(f"{k} {100 * v:5.1f}%" for k, v in result.attainment.items())
            ratio = result.tokens_per_s / results["fcfs"].tokens_per_s
            print(f"rate {rate:5.2f}/s  {name:15s} {shares}  {result.tokens_per_s:6.1f} tok/s "
                  f"({ratio:.2f}x fcfs)  refused {result.num_refused}")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=lambda t: [float(x) for x in t.split(",")], default=[4.0, 5.0, 6.0, 8.0])
    parser.add_argument("--num-requests", type=int, default=400)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--class-mix", default=DEFAULT_CLASS_MIX)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--margin", type=float, default=PacingConfig.margin)
    parser.add_argument("--min-allowance", type=float, default=PacingConfig.min_allowance)
    parser.add_argument("--step-ms", type=float, default=24.0)
    parser.add_argument("--sequence-ms", type=float, default=4.0)
    parser.add_argument("--prefill-token-ms", type=float, default=1.3)
    return parser.parse_args()


if __name__ == "__main__":
    main()
