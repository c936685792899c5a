"""skillos sleep harvest + mine vs reading the same transcript files with bare json.loads, in one run.

Run by hand: `python tests/benchmarks/bench_sleep_harvest.py [N_CLAUDE] [N_CODEX]`.
Workload: N_CLAUDE Claude Code sessions of 10 requests (tool uses, one correction each) and
N_CODEX Codex CLI rollouts of 10 turns (each logged twice), in the real formats; harvest with
redaction and a digest written, then mining.
Target: harvest + mine take at most 8x the time of parsing every line with json.loads (prints
the ratio against that limit).
"""

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from sleep_fixtures import Claude, codex_rollout  # noqa: E402

from skillos.config import SleepConfig  # noqa: E402
from skillos.training.textopt.sleep.harvest import harvest  # noqa: E402
from skillos.training.textopt.sleep.mine import mine  # noqa: E402

TARGET = 8.0


def build(root: Path, n_claude: int, n_codex: int) -> None:
    for i in range(n_claude):
        c = Claude(f"b{i:05d}")
        for j in range(10):
            c.user(f"Request {j} of session {i}: write the note about topic {j * i % 97}").assistant(
                "Here it is " * 50, tools=[("Bash", {"command": "ls"})])
        c.user("No, you forgot the `TL;DR:` line").assistant("fixed").write(root)
    for i in range(n_codex):
        codex_rollout(root, f"x{i:05d}", [(f"Summarize test run {k} of {i}", "ok " * 40) for k in range(10)])


def main() -> None:
    n_claude = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    n_codex = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    root = Path(tempfile.mkdtemp())
    build(root, n_claude, n_codex)
    files = sorted(root.rglob("*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    t = time.perf_counter()
    lines = sum(1 for p in files for line in p.read_bytes().splitlines() if json.loads(line))
    bare = time.perf_counter() - t
    t = time.perf_counter()
    h = harvest(SleepConfig(claude_dir=str(root / ".claude"), codex_dir=str(root / ".codex"),
                            max_sessions=10 ** 6), home=root / "home")
    tasks, counts = mine(h.sessions)
    ours = time.perf_counter() - t
    ratio = ours / bare
    print(f"{len(files)} files, {lines} lines, {size / 1e6:.1f} MB; {len(h.sessions)} sessions, {len(tasks)} tasks")
    print(f"json.loads only: {bare:.2f} s; harvest + redaction + digest + mine: {ours:.2f} s "
          f"({size / 1e6 / ours:.1f} MB/s)")
    print(f"ratio {ratio:.1f}x (target <= {TARGET:g}x): {'PASS' if ratio <= TARGET else 'FAIL'}")


if __name__ == "__main__":
    main()
