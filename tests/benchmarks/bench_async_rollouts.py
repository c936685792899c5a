"""GRPO steps with and without `training.async_rollouts`, against what overlap could reach.

The CPU smoke config (real ALFWorld games, the real trainer, the tiny curator without its
warm-up) with the LLM executor (the real OpenAI SDK) calling a local endpoint, in its own
process, that answers after a set latency: `steps` GRPO steps on-policy, then the same with the
next batch played while a step trains. The on-policy run measures each step's rollout phase R
and the rest of the step T (the loss, backward, optimizer step); a step that overlaps them can at
best take max(R, T). Printed: the median step (the first left out: both runs make it on-policy)
of each run, the speed-up, the overlapped step's ratio to that bound (target >= 0.9), the time
the overlapped steps waited for their batch, and the batches made ahead / on-policy / discarded.
On 2 cores the copy generating and the step training share the cores, and the executor's wait is
what overlap hides.

Run by hand: `python tests/benchmarks/bench_async_rollouts.py [steps] [rollouts] [latency_s]
[max_steps]` (defaults 5, 8, 0.2, 10).
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_grpo_rollouts import SMOKE, endpoint, executor_sets  # noqa: E402 - the same endpoint and executor

TARGET_RATIO = 0.9  # the overlapped step against max(rollout phase, rest of the step), both from this run
COMPLETION = 128

RUN = """
import json, sys
from skillos import config as cfgmod
from skillos.training.curator.trainer import train

cfg = cfgmod.load({config!r}, {sets!r})
summary = train(cfg, None, echo=lambda line: print(line, file=sys.stderr), warmup=False)
print(json.dumps({{"steps": [s.get("phase") for s in summary["steps"]], "async": summary.get("async")}}))
"""


def run(work: Path, name: str, url: str, steps: int, rollouts: int, max_steps: int, extra: list) -> dict:
    sets = executor_sets(url, max_steps) + [
        f"training.output_dir={work / name}", f"training.max_steps={steps}", f"training.save_steps={steps}",
        "training.format_warmup_steps=0", "training.report_to=none", f"training.max_completion_length={COMPLETION}",
        "training.num_generations=2", f"training.generation_batch_size={rollouts}",
        f"training.per_device_train_batch_size={rollouts}", f"env.n_train_games={max(36, 3 * rollouts * steps)}",
        *extra]
    env = {**os.environ, "OPENAI_API_KEY": "bench", "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run([sys.executable, "-c", RUN.format(config=str(SMOKE), sets=sets)], capture_output=True,
                          text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{name}: the run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(steps: int = 5, rollouts: int = 8, latency: float = 0.2, max_steps: int = 10) -> None:
    if steps < 3:
        raise SystemExit("steps: at least 3 (the first step of either run is on-policy and left out)")
    server, url = endpoint(latency)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            synced = run(work, "sync", url, steps, rollouts, max_steps, [])
            played = run(work, "async", url, steps, rollouts, max_steps,
                         ["training.async_rollouts=true", "training.max_staleness=1"])
    finally:
        server.terminate()
    on = [p for p in synced["steps"][1:] if p and p.get("step_seconds")]
    ahead = [p for p in played["steps"][1:] if p and p.get("step_seconds")]
    if not on or not ahead:
        raise SystemExit(f"unmeasured: {len(on)} on-policy and {len(ahead)} overlapped steps carried timings")
    step_on = statistics.median(p["step_seconds"] for p in on)
    rollout = statistics.median(p["rollout_seconds"] or 0.0 for p in on)
    rest = statistics.median(p["step_seconds"] - (p["rollout_seconds"] or 0.0) for p in on)
    step_ahead = statistics.median(p["step_seconds"] for p in ahead)
    waited = statistics.median(p.get("waited_seconds") or 0.0 for p in ahead)
    phase_ahead = statistics.median(p["rollout_seconds"] or 0.0 for p in ahead)
    bound = max(rollout, rest)
    stats = played["async"] or {}
    print(f"on-policy : median step {step_on:.1f} s over {len(on)} steps (rollout phase {rollout:.1f} s, the rest "
          f"{rest:.1f} s); {rollouts} rollouts, {latency * 1000:.0f} ms per executor request")
    print(f"async     : median step {step_ahead:.1f} s over {len(ahead)} steps, waiting {waited:.1f} s for its batch "
          f"(whose rollout phase took {phase_ahead:.1f} s beside the step before); "
          f"made ahead {stats.get('made_ahead')}, on-policy {stats.get('on_policy')}, discarded "
          f"{stats.get('discarded')}, staleness {stats.get('staleness')}")
    print(f"speed-up  : {step_on / step_ahead:.2f}x; overlapped step against max(rollout phase, rest) = {bound:.1f} s: "
          f"{bound / step_ahead:.2f} (target >= {TARGET_RATIO})")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*(int(a) if i in (0, 1, 3) else float(a) for i, a in enumerate(args)))
