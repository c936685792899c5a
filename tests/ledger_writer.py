"""Helper process for the concurrency test: append N failures, print each committed sequence
number (flushed) so the test knows what was committed before a SIGKILL."""

import sys
import time

from skillos.ledger import Ledger

path, worker, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ledger = Ledger(path)
for seq in range(n):
    ledger.add_failure(f"w{worker}-{seq}", "near-miss", kind="operational", detected_by="toolkit",
                       token=f"w{worker}-{seq}")
    print(seq, flush=True)
    time.sleep(0.002)  # leave the test time to kill us mid-run
