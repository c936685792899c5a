"""`skillos gate check` (static) on each shipped config against its 1 s target.

Run by hand: `python tests/benchmarks/bench_gate_check.py [CONFIG...] [--repeats N] [--matrix RUNS]`
(default: every shipped config, best of 5; --matrix: the quickstart as a matrix of RUNS runs, its
limit MATRIX_TARGET_S for config.MAX_MATRIX_RUNS runs). Times the whole command (interpreter
start, imports, config load, every static check) as a subprocess, best of 5, and the checks
alone in-process; prints each as a ratio of the target.
"""

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET_S = 1.0
CONFIGS = [ROOT / "evals/configs/quickstart.yaml", *sorted((ROOT / "training/configs").glob("*.yaml"))]


def command_wall(path: Path, repeats: int = 5) -> float:
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "skillos", "gate", "check", str(path)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def checks_only(path: Path) -> float:
    from skillos import config, gates

    cfg = config.load(path)
    gates.check(cfg)  # warm: the first call imports the check modules
    t = time.perf_counter()
    gates.check(cfg)
    return time.perf_counter() - t


MATRIX_TARGET_S = 10.0  # the largest matrix the schema accepts, checked in seconds, not minutes


def matrix_config(runs: int) -> Path:
    """The quickstart as a matrix of `runs` runs (eval.bootstrap values x 2 seeds), beside it (its
    paths resolve from there); the caller removes it."""
    import yaml

    data = yaml.safe_load((ROOT / "evals/configs/quickstart.yaml").read_text())
    data["experiment"]["seeds"] = [0, 1]
    data["matrix"] = {"b": {"key": "eval.bootstrap", "values": list(range(1000, 1000 + runs // 2))}}
    path = ROOT / "evals/configs" / f".bench-matrix-{runs}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def main():
    args = sys.argv[1:]
    repeats = int(args[args.index("--repeats") + 1]) if "--repeats" in args else 5
    if "--matrix" in args:
        runs = int(args[args.index("--matrix") + 1])
        path = matrix_config(runs)
        try:
            wall = command_wall(path, repeats)
        finally:
            path.unlink()
        print(f"matrix of {runs} runs: command {wall:5.2f} s = {wall / MATRIX_TARGET_S:.2f} of {MATRIX_TARGET_S:.0f} s")
        return
    paths = [Path(a) for i, a in enumerate(args) if a != "--repeats" and (i == 0 or args[i - 1] != "--repeats")]
    for path in paths or CONFIGS:
        wall, inner = command_wall(path, repeats), checks_only(path)
        print(f"{path.name:28s} command {wall:5.2f} s = {wall / TARGET_S:.2f} of {TARGET_S:.0f} s; "
              f"checks alone {1000 * inner:6.1f} ms = {inner / TARGET_S:.3f} of {TARGET_S:.0f} s")


if __name__ == "__main__":
    main()
