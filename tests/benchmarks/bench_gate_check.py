"""`skillos gate check` (static) on each shipped config against its 1 s target.

Run by hand: `python tests/benchmarks/bench_gate_check.py`. Times the whole command (interpreter
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


def command_wall(path: Path) -> float:
    best = float("inf")
    for _ in range(5):
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


def main():
    for path in CONFIGS:
        wall, inner = command_wall(path), checks_only(path)
        print(f"{path.name:28s} command {wall:5.2f} s = {wall / TARGET_S:.2f} of {TARGET_S:.0f} s; "
              f"checks alone {1000 * inner:6.1f} ms = {inner / TARGET_S:.3f} of {TARGET_S:.0f} s")


if __name__ == "__main__":
    main()
