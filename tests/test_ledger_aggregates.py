"""The ledger's counts and pages in SQL (`ledger stats`, `postmortem`, `failures list --limit`)
give what the per-row computation gives on the same ledger: corrections, invalidations,
restores, modes, costs and fixes applied, ties ordered the same way."""

import json

import pytest

from conftest import run_cli
from skillos.ledger import Ledger, LedgerError
from skillos.ledger import postmortem as pm
from skillos.ledger.stats import failure_counts, failure_stats

CATEGORIES = ("near-miss", "harness-bug", "process", "statistical")
MODES = ("stale-note", "job-not-box", "partial-artifact", "silent-sentinel")


def populate(path) -> tuple[Ledger, dict]:
    ledger = Ledger(path)
    ledger.set_goal("reproduce SkillOS", "person")
    exp, other = ledger.add_experiment("a", "h"), ledger.add_experiment("b")
    run, other_run = ledger.start_run(exp, "x", seed=1), ledger.start_run(other, "y", seed=2)
    ledger.end_run(run, "finished")
    ids = [ledger.add_failure(
        f"failure {i}", CATEGORIES[i % 4 if i < 12 else (i * 7) % 3], modes=MODES[(i * 3) % 4:(i * 3) % 4 + i % 3],
        kind=("operational", "scientific")[i % 2], detected_by=("toolkit", "gate", "person")[i % 3],
        cost_gpu_hours=None if i % 3 else i * 0.1, cost_wall_hours=None if i % 5 else 1 / (i + 1),
        gate=(None, "3", "", "7")[i % 4], experiment_id=exp if i % 3 == 0 else None,
        run_id=other_run if i % 5 == 1 else None) for i in range(24)]
    ledger.set_failure_status(ids[3], "fixed", "patched")
    ledger.set_failure_status(ids[3], "verified", "measured again")
    ledger.set_failure_status(ids[8], "verified", "measured")
    ledger.correct("failures", ids[4], "retract", "not a failure")
    ledger.correct("failures", ids[4], "restore", "it was one")
    ledger.correct("failures", ids[5], "invalidate", "duplicate")
    ledger.correct("failures", ids[9], "supersede", "a newer row")
    ledger.set_failure_status(ids[9], "fixed", "and fixed")
    ledger.correct("failures", ids[10], "status", "a status without a value")  # status None
    ledger.correct("failures", ids[11], "conclusion", "noted", value="a conclusion")
    ledger.add_fix(ids[6], "retry", "success_rate", "up", before_run_id=run)
    ledger.add_override(3, "positions", "debug run", "person", exp)
    # older records: the since scope cuts, and the timeline interleaves, by date
    ledger.db.execute("UPDATE failures SET created_at = '2026-01-0' || (id % 9 + 1) || 'T00:00:00+00:00' "
                      "WHERE id % 2 = 0")
    return ledger, {"exp": exp, "other": other, "run": run, "other_run": other_run}


def per_row_failures(ledger, experiment_id=None, run_id=None, since=None) -> list[dict]:
    """The failures of a postmortem's scope as it chose them before: every failure read, then
    filtered in Python."""
    failures = ledger.failures()
    if experiment_id is not None:
        run_ids = {r["id"] for r in ledger.rows("runs") if r["experiment_id"] == experiment_id}
        failures = [f for f in failures if f["experiment_id"] == experiment_id or f["run_id"] in run_ids]
    elif run_id is not None:
        failures = [f for f in failures if f["run_id"] == run_id]
    return [f for f in failures if f["created_at"] >= since] if since else failures


def test_sql_counts_and_postmortems_equal_the_per_row_ones(tmp_path):
    ledger, ids = populate(tmp_path / "l.db")
    everything = failure_counts(ledger)
    assert everything == failure_stats(ledger.failures())
    assert json.dumps(everything) == json.dumps(failure_stats(ledger.failures()))  # the order of keys too
    assert everything["failures"] == 23 and everything["retracted_or_invalid"] == 2  # 24 + the override's
    assert None in everything["by_status"] and everything["cost"]["gpu_hours_measured_on"] == 7  # 8, one superseded
    assert list(everything["by_mode"].values()) == sorted(everything["by_mode"].values(), reverse=True)
    scopes = [{}, {"experiment_id": ids["exp"]}, {"experiment_id": ids["other"]}, {"run_id": ids["other_run"]},
              {"since": "2026-01-05"}, {"experiment_id": ids["exp"], "since": "2026-01-03"}, {"since": "2999-01-01"}]
    for scope in scopes:
        title, experiments, runs, (condition, args), gates, overrides = pm._scope(ledger, **scope)
        failures = per_row_failures(ledger, **scope)
        assert json.dumps(failure_counts(ledger, condition, args)) == json.dumps(failure_stats(failures)), scope
        fixes = [ledger.fix(r["id"]) for r in ledger.rows("fixes") if r["failure_id"] in {f["id"] for f in failures}]
        scoped = experiments if {"experiment_id", "run_id"} & set(scope) else None
        steps = pm._person_steps(ledger, scoped, scope.get("since"))
        before = pm.render(ledger.path, title, ledger.goal(), experiments, runs, failures, failure_stats(failures),
                           gates, overrides, fixes, steps)
        assert pm.postmortem(ledger, **scope) == before, scope
    assert "0 failures (0 retracted or invalid" in pm.postmortem(ledger, since="2999-01-01")
    ledger.close()


def test_a_page_is_the_newest_failures_and_says_how_many_of_how_many(tmp_path):
    ledger, ids = populate(tmp_path / "l.db")
    every = ledger.failures()
    for filters in ({}, {"status": "open"}, {"status": "fixed"}, {"status": "verified"}, {"category": "process"},
                    {"experiment_id": ids["exp"], "status": "open"}, {"text": "failure 1"}):
        matching = [f for f in every if all(
            f["status"] == v if k == "status" else v in f["what"] if k == "text" else f[k] == v
            for k, v in filters.items())]
        assert ledger.failures(**filters) == matching, filters
        page = ledger.failures_page(3, **filters)
        assert page == {"shown": min(3, len(matching)), "of": len(matching), "limit": 3,
                        "failures": matching[-3:]}, filters
    assert [f["id"] for f in ledger.failures(status="fixed")] == [10]  # superseded, then fixed: current status
    assert ledger.failures_page(None)["shown"] == len(every) == 25
    with pytest.raises(LedgerError, match="limit of -1"):
        ledger.failures(limit=-1)
    ledger.close()


def test_failures_list_cli_pages_and_prints_its_denominator(skillos_home):
    ledger, _ = populate(skillos_home / "ledger.db")
    ledger.close()
    shown = json.loads(run_cli("ledger", "failures", "list", "--limit", "2", "--json").stdout)
    assert (shown["shown"], shown["of"], shown["limit"]) == (2, 25, 2)
    assert [f["id"] for f in shown["failures"]] == [24, 25]
    text = run_cli("ledger", "failures", "list", "--limit", "2").stdout.splitlines()
    assert text[-1] == "2 of 25 failures shown (the newest; --limit 0 shows all)" and len(text) == 3
    assert run_cli("ledger", "failures", "list", "--limit", "0").stdout.splitlines()[-1] == "25 of 25 failures shown"
    assert run_cli("ledger", "failures", "list", "--category", "wrong-claim").stdout == "no failure matches\n"
    bad = run_cli("ledger", "failures", "list", "--limit", "-1")
    assert bad.returncode == 2 and "limit of -1" in bad.stderr and "Traceback" not in bad.stderr
    stats = json.loads(run_cli("ledger", "stats", "--json").stdout)
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert stats == json.loads(json.dumps(failure_stats(ledger.failures())))
