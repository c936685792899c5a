"""Ledger reads at 100,000 failures: `skillos ledger stats`, `skillos ledger failures list` and
`skillos postmortem` (the real CLI, wall time including its start), and the library read behind
them beside the one-query-per-failure read it replaced, measured in the same run. Target: each
command <= 1 s at 100,000 failures.

Run by hand: `python tests/benchmarks/bench_ledger_reads.py [n_failures]`. The ledger is filled
with plain SQL in one transaction (what add_failure would write: a mode on every third failure,
a status correction on every tenth, a fix on every hundredth), so the setup takes seconds.
"""

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from skillos.ledger import Ledger
from skillos.ledger.stats import failure_stats
from skillos.ledger.store import now


def fill(ledger: Ledger, n: int) -> None:
    db, stamp = ledger.db, now()
    db.execute("BEGIN")
    db.executemany("INSERT INTO failures (id, what, category, kind, detected_by, status, created_at) "
                   "VALUES (?, ?, ?, 'operational', 'toolkit', 'open', ?)",
                   [(i, f"failure {i}", ("near-miss", "harness-bug", "process")[i % 3], stamp) for i in range(1, n + 1)])
    db.executemany("INSERT INTO failure_modes VALUES (?, ?)", [(i, "stale-note") for i in range(1, n + 1, 3)])
    db.executemany("INSERT INTO corrections (table_name, row_id, kind, value, reason, actor, created_at) "
                   "VALUES ('failures', ?, 'status', 'fixed', 'patched', 'bench', ?)",
                   [(i, stamp) for i in range(1, n + 1, 10)])
    db.executemany("INSERT INTO fixes (failure_id, description, metric, direction, created_at) "
                   "VALUES (?, 'retry', 'success', 'up', ?)", [(i, stamp) for i in range(1, n + 1, 100)])
    db.execute("COMMIT")


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    home = Path(tempfile.mkdtemp(prefix="bench-ledger-"))
    with Ledger(home / "ledger.db") as ledger:
        fill(ledger, n)
        cpu = time.process_time()
        batched, rows = timed(ledger.failures)
        cpu = time.process_time() - cpu
        sample = rows[:: max(1, n // 2000)]
        per_row, _ = timed(lambda: [ledger.failure(f["id"]) for f in sample])
        per_row *= n / len(sample)  # the old read made these four queries for every failure
        stats, _ = timed(lambda: failure_stats(rows))
    print(f"{n} failures: failures() {batched:.2f} s wall, {cpu:.2f} s CPU (one read per failure: {per_row:.1f} s, extrapolated from "
          f"{len(sample)}; {per_row / batched:.0f}x); failure_stats {stats:.2f} s")
    env = {**os.environ, "SKILLOS_HOME": str(home)}
    for command in (["ledger", "stats"], ["ledger", "failures", "list", "--json"], ["postmortem"], ["--help"]):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds, done = timed(lambda: subprocess.run([sys.executable, "-m", "skillos", *command], env=env,
                                                    capture_output=True, text=True))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if done.returncode:
            raise SystemExit(f"{command}: {done.stderr[-2000:]}")
        # CPU time beside wall time: on a shared machine the wall time also measures the neighbours.
        print(f"  skillos {' '.join(command):28s} {seconds:.2f} s wall, {cpu:.2f} s CPU (target <= 1 s -> "
              f"{seconds:.2f} / {cpu:.2f} of it)" + ("  <- the CLI's start alone" if command == ["--help"] else ""))


if __name__ == "__main__":
    main()
