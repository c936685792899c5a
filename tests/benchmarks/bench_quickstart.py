"""Wall time of the main job against its 60 s target on 2 cores.

Run by hand: `python tests/benchmarks/bench_quickstart.py [RUNS]`. Runs `skillos quickstart`
RUNS times (default 2) in fresh output folders: the first run may generate and cache games
(reported separately), the second is the steady state a researcher sees. Prints each wall time
as a ratio of the target. (The slow suite runs it once: that it runs, not the steady state.)
"""

import subprocess
import sys
import tempfile
import time

TARGET_S = 60.0


def run_once(out):
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "skillos", "quickstart", "--json", "--out", out],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    root = tempfile.mkdtemp(prefix="skillos-bench-qs-")
    first = run_once(f"{root}/first")
    print(f"quickstart, first run (may generate games): {first:6.1f} s = {first / TARGET_S:.2f} of {TARGET_S:.0f} s")
    for i in range(1, runs):
        second = run_once(f"{root}/run-{i + 1}")
        print(f"quickstart, cached games:                   {second:6.1f} s = {second / TARGET_S:.2f} of "
              f"{TARGET_S:.0f} s")


if __name__ == "__main__":
    main()
