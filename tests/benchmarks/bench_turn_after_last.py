"""A curator GRPO step with and without the turn after the last tool iteration, on 2 cores.

TRL's tool loop generates one more turn after a rollout's last tool iteration, whose calls never
run; the curator trainer does not generate it (training/curator/masks.py). This bench runs the
curator canary's miniature (training/configs/canary-curator.yaml plus SETS, the stop-79 recipe on
the tuning split: call tokens, 2 prompts x 8 completions) from one warm start, alternating the
trainer as shipped ("skip") and the same trainer told to generate that turn ("gen"), `repeats`
runs of `steps` steps each, and prints each run's median step and rollout-phase seconds (the first
step left out: it loads), then the ratio of the medians, skip / gen, against the limit 0.9 (the gen
runs of the same call are the baseline).

Run by hand: `python tests/benchmarks/bench_turn_after_last.py [steps] [repeats] [out or -] [key=value
...]` (defaults 15, 2, a temporary folder; the warm start, ~80 s, is built once into out/warm; further
config sets after SETS, e.g. a smaller warm start for a run that only checks the bench runs).
"""

import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillos.config.loading import load, with_sets
from skillos.training.curator import canary, trainer

SETS = ["canary.split=tuning", "canary.call_tokens=true", "canary.decisive_train=true", "canary.warmup_draws=3",
        "training.per_device_train_batch_size=16", "training.num_generations=8", "training.generation_batch_size=16",
        "training.learning_rate=3e-4", "training.weight_decay=0.01", "training.max_grad_norm=0", "training.top_k=50",
        "training.curriculum=interleaved"]
LIMIT = 0.9


def main(steps: int = 15, repeats: int = 2, out: str | None = None, *sets: str) -> None:
    out_dir = Path(out if out and out != "-" else tempfile.mkdtemp(prefix="bench-turn-"))
    cfg = load(canary.CONFIG, sets=SETS + [f"training.max_steps={steps}", f"training.save_steps={steps}", *sets])

    def echo(line):
        print(line, file=sys.stderr, flush=True)

    train_games, _ = canary.miniature_games(cfg, echo, "curator")
    pool = canary.decisive(cfg, train_games, echo)
    started = time.time()
    warm = canary.warm_start(cfg, train_games, out_dir / "warm", echo)
    print(f"warm start: {time.time() - started:.0f} s", flush=True)
    runs = Path(tempfile.mkdtemp(prefix="runs-", dir=out_dir))  # a finished run's folder would be reused
    shipped = trainer.masked_trainer
    medians = {"skip": [], "gen": []}
    try:
        for k in range(repeats):
            for arm in ("skip", "gen"):
                def masked(base, arm=arm):
                    cls = shipped(base)
                    cls.generate_after_last_iteration = arm == "gen"
                    return cls

                trainer.masked_trainer = masked
                run_cfg = with_sets(cfg, [f"training.model={warm}", f"training.output_dir={runs / f'{k}-{arm}'}"])
                summary = trainer.train(run_cfg, None, echo=echo, warmup=False, signal="real", games=pool)
                phases = [s.get("phase") or {} for s in summary["steps"]][1:]
                step = statistics.median(p["step_seconds"] for p in phases if p.get("step_seconds"))
                rollout = statistics.median(p["rollout_seconds"] for p in phases if p.get("rollout_seconds"))
                left = summary["steps"][-1].get("left_out")
                medians[arm].append(step)
                print(f"run {k} {arm}: median step {step:.2f} s, rollout phase {rollout:.2f} s over "
                      f"{len(phases)} steps; last step's counts {left}", flush=True)
    finally:
        trainer.masked_trainer = shipped
    skip, gen = statistics.median(medians["skip"]), statistics.median(medians["gen"])
    ratio = skip / gen
    print(f"median step: skip {skip:.2f} s, gen {gen:.2f} s; ratio {ratio:.2f} "
          f"({'within' if ratio <= LIMIT else 'over'} the limit {LIMIT})")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]), *sys.argv[3:])
