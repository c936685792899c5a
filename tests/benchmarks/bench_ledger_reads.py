"""Ledger reads at 100,000 failures: `skillos ledger stats`, `skillos ledger failures list --json`
(its default page: the newest 100, with the total) and `skillos postmortem` (the real CLI, wall
time including its start), each with its ratio to the 1 s limit; and the library reads behind
them beside the per-row computation they replaced, measured in the same run. Target: each
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
from skillos.ledger.postmortem import postmortem
from skillos.ledger.stats import failure_counts, failure_stats
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


LIMIT_S = 1.0  # each command, wall time, at 100,000 failures
COMMANDS = (["ledger", "stats"], ["ledger", "failures", "list", "--json"], ["postmortem"])


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
        per_row *= n / len(sample)  # the first read made these four queries for every failure
        stats, by_row = timed(lambda: failure_stats(rows))
        counted, by_sql = timed(lambda: failure_counts(ledger))
        page, _ = timed(lambda: ledger.failures_page(100))
        report, _ = timed(lambda: postmortem(ledger))
    assert by_sql == by_row, "the SQL counts differ from the per-row ones"
    print(f"{n} failures: failures() {batched:.2f} s wall, {cpu:.2f} s CPU (one read per failure: {per_row:.1f} s, "
          f"extrapolated from {len(sample)}; {per_row / batched:.0f}x)")
    print(f"  counts: in SQL {counted:.2f} s, per row {batched + stats:.2f} s (failures() + failure_stats; the same "
          f"result); page of 100 {page:.3f} s; postmortem() {report:.2f} s")
    env = {**os.environ, "SKILLOS_HOME": str(home)}
    for command in (*COMMANDS, ["ledger", "failures", "list", "--json", "--limit", "0"], ["--help"]):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds, done = timed(lambda: subprocess.run([sys.executable, "-m", "skillos", *command], env=env,
                                                    capture_output=True, text=True))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if done.returncode:
            raise SystemExit(f"{command}: {done.stderr[-2000:]}")
        # CPU time beside wall time: on a shared machine the wall time also measures the neighbours.
        line = f"  skillos {' '.join(command):40s} {seconds:.2f} s wall, {cpu:.2f} s CPU"
        if command in COMMANDS:
            line += f"  -> {seconds / LIMIT_S:.2f} of the {LIMIT_S:g} s limit ({'met' if seconds <= LIMIT_S else 'NOT met'})"
        else:
            line += "  (the CLI's start alone)" if command == ["--help"] else f"  (all {n}: no target)"
        print(line)


if __name__ == "__main__":
    main()
