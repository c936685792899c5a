"""Ledger reads in a few queries: `failures()` (behind `ledger stats`, `failures list` and the
postmortem) returns exactly what `failure(id)` returns for each failure, with every filter."""

from skillos.ledger import Ledger


def test_batched_failures_equal_one_read_per_failure(tmp_path):
    with Ledger(tmp_path / "ledger.db") as ledger:
        exp = ledger.add_experiment("e", "h")
        ids = []
        for i in range(30):
            ids.append(ledger.add_failure(f"thing {i} broke", ("near-miss", "harness-bug", "process")[i % 3],
                                          modes=["stale-note", "job-not-box", "partial-artifact"][: i % 4], kind="operational",
                                          detected_by="toolkit", experiment_id=exp if i % 2 else None))
        ledger.set_failure_status(ids[3], "fixed", "patched")
        ledger.correct("failures", ids[4], "retract", "not a failure")
        ledger.correct("failures", ids[4], "restore", "it was")
        ledger.correct("failures", ids[5], "invalidate", "duplicate")
        run = ledger.start_run(exp, "train")
        ledger.add_fix(ids[6], "retry the call", "success_rate", "up", before_run_id=run)
        ledger.add_fix(ids[6], "and again", "success_rate", "up", before_run_id=run)
        for filters in ({}, {"category": "harness-bug"}, {"status": "fixed"}, {"text": "thing 1"},
                        {"experiment_id": exp}, {"category": "near-miss", "experiment_id": exp}):
            got = ledger.failures(**filters)
            assert got == [ledger.failure(f["id"]) for f in got], filters
            assert len(got) > 0, filters
        everything = ledger.failures()
        assert len(everything) == 30 and everything[6]["fixes"] and everything[2]["modes"] == ["job-not-box", "stale-note"]
        assert not everything[5]["valid"] and everything[4]["valid"] and everything[3]["status"] == "fixed"
