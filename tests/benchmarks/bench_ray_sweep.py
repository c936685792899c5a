"""The same sweep (the no_memory control and N skill repos on the heuristic executor) run locally
(eval.workers arm processes) and on a local Ray cluster (compute.backend ray, each arm a task),
`repeats` times each, alternating: the median wall times, their ratio (ray / local), the
cluster's start-up apart, and a check that both wrote the same rows.

Run by hand: `python tests/benchmarks/bench_ray_sweep.py [n_games] [n_repos] [repeats]`. The
games are generated (and cached) before any timing; both sides run the gates and record in a
scratch ledger, so the difference is how the arms are run.
"""

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from skillos import api
from skillos import config as cfgmod
from skillos.evals.arms import load_games

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "evals" / "configs" / "quickstart.yaml"


def skill_repo(folder: Path, i: int) -> Path:
    (folder / "where-to-find-mug").mkdir(parents=True)
    (folder / "where-to-find-mug" / "SKILL.md").write_text(
        f"---\nname: where-to-find-mug\ndescription: Where mugs were found.\n---\nMugs: look in cabinet {i}.\n")
    return folder


def lines(out: Path) -> list:
    return sorted(line for name in ("games.jsonl", "trajectories.jsonl")
                  for line in (out / name).read_text().splitlines())


def main():
    n_games = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    n_repos = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    scratch = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    os.environ["SKILLOS_HOME"] = str(scratch / "home")
    cpus = os.cpu_count() or 1
    sets = [f"env.n_games={n_games}", "env.n_train_games=0", f"eval.workers={cpus}"]
    local_cfg = cfgmod.load(CONFIG, sets)
    ray_cfg = cfgmod.load(CONFIG, sets + ["compute.backend=ray"])
    repos = [skill_repo(scratch / f"checkpoint-{10 * (i + 1)}", i) for i in range(n_repos)]
    load_games(local_cfg, local_cfg.env.split, n_games)  # generated before any timing

    import ray

    start = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    startup = time.perf_counter() - start
    times = {"local": [], "ray": []}
    try:
        for k in range(repeats):
            for name, cfg in (("local", local_cfg), ("ray", ray_cfg)):
                out = scratch / f"{name}-{k}"
                start = time.perf_counter()
                api.sweep(cfg, executor="heuristic", repos=repos, out=out)
                times[name].append(time.perf_counter() - start)
                if lines(out) != lines(scratch / "local-0"):
                    raise SystemExit(f"rows differ: {out} vs {scratch / 'local-0'}")
    finally:
        ray.shutdown()
    local, on_ray = statistics.median(times["local"]), statistics.median(times["ray"])
    print(f"sweep of {n_repos + 1} arms x {n_games} games, {cpus} CPUs, median of {repeats}: "
          f"local {local:.1f} s, ray {on_ray:.1f} s (cluster up), ratio ray/local {on_ray / local:.2f}; "
          f"cluster start {startup:.1f} s once (ratio with it: {(on_ray + startup) / local:.2f}); "
          f"rows identical in all {2 * repeats} runs")


if __name__ == "__main__":
    main()
