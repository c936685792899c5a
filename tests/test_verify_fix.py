"""Gate 6: a fix is verified only if the number moves; otherwise the diagnosis is reopened."""

import hashlib
import json

import pytest

from conftest import run_cli
from skillos.ledger import Ledger, LedgerError

SETTINGS = dict(alpha=0.05, power=0.8, n_boot=1000)


def recorded_run(ledger, folder, name, successes, coerced=0, unmeasured=0):
    """A run whose per-game JSONL has 40 games of 10 steps, the first `successes` of them won, the
    first `coerced` with 3 coerced actions, the last `unmeasured` unmeasured."""
    path = folder / f"{name}.jsonl"
    rows = [{"arm": "closed_loop", "phase": "eval", "game_id": f"g{i:02d}",
             "success": None if i >= 40 - unmeasured else i < successes, "unmeasured": i >= 40 - unmeasured,
             "steps": 10, "coerced_actions": 3 if i < coerced else 0} for i in range(40)]
    rows.append({"arm": "no_memory", "phase": "eval", "game_id": "g00", "success": False})  # other arm
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    exp = ledger.add_experiment(name)
    run = ledger.start_run(exp, "closed_loop", {}, 0)
    summary = {"attempted": 40, "measured": 40, "unmeasured": 0, "successes": successes,
               "coerced_actions": 0, "actions": 400}
    ledger.add_eval(run, "closed_loop", summary, str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    ledger.end_run(run)
    return run, path


def test_fix_that_moves_the_number_is_verified(skillos_home, tmp_path):
    with Ledger() as ledger:
        failure = ledger.add_failure("retrieval ignored the body", "harness-bug")
        before, _ = recorded_run(ledger, tmp_path, "before", 10)
    added = run_cli("ledger", "fixes", "add", "--failure", str(failure), "--description",
                    "index the body", "--direction", "up", "--expected", "0.2", "--before", str(before),
                    "--json")
    assert added.returncode == 0, added.stderr
    fix = json.loads(added.stdout)["id"]
    with Ledger() as ledger:
        after, _ = recorded_run(ledger, tmp_path, "after", 30)  # the run after the fix
    result = run_cli("ledger", "verify-fix", str(fix), "--after", str(after), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["verified"] is True and data["comparison"]["b"] == 20 and data["comparison"]["c"] == 0
    with Ledger() as ledger:
        assert ledger.failure(failure)["status"] == "verified"
        assert ledger.fix(fix)["verdict"] == "verified"


def test_fix_that_does_not_move_the_number_reopens_the_diagnosis(tmp_path):
    from skillos.evals.verify import verify_fix

    with Ledger(tmp_path / "l.db") as ledger:
        failure = ledger.add_failure("success dropped after refactor", "harness-bug")
        ledger.set_failure_status(failure, "fixed", "patched the parser")
        before, _ = recorded_run(ledger, tmp_path, "before", 10)
        fix = ledger.add_fix(failure, "patched the parser", "success_rate", "up", 0.1, before)
        after, _ = recorded_run(ledger, tmp_path, "after", 11)
        result = verify_fix(ledger, fix, after, **SETTINGS)
        assert result["verified"] is False and result["verdict"]["word"] == "not detected"
        assert "did not move detectably" in result["detail"] and "not evidence of no effect" in result["detail"]
        assert ledger.failure(failure)["status"] == "open"
        assert ledger.fix(fix)["verdict"] == "reopened"


def test_changed_per_game_file_is_refused(tmp_path):
    from skillos.evals.verify import verify_fix

    with Ledger(tmp_path / "l.db") as ledger:
        failure = ledger.add_failure("x", "process")
        before, path = recorded_run(ledger, tmp_path, "before", 10)
        fix = ledger.add_fix(failure, "y", "success_rate", "up", None, before)
        after, _ = recorded_run(ledger, tmp_path, "after", 30)
        path.write_text(path.read_text().replace('"success": false', '"success": true'))
        with pytest.raises(LedgerError, match="changed since it was recorded"):
            verify_fix(ledger, fix, after, **SETTINGS)
        assert ledger.fix(fix).get("verdict") is None  # no verdict from tampered evidence


def test_a_fix_is_judged_by_the_metric_its_failure_named(tmp_path):
    """A fix for coerced actions is verified when coercion falls, whatever success did; one whose
    coercion did not fall is reopened even though success rose; an outage fix is judged by the
    unmeasured rate. Each with its denominators."""
    from skillos.evals.verify import PER_GAME, verify_fix
    from skillos.ledger import taxonomy

    assert set(PER_GAME) == set(taxonomy.MEASURED_METRICS)
    with Ledger(tmp_path / "l.db") as ledger:
        failure = ledger.add_failure("the executor's actions were coerced", "harness-bug")
        before, _ = recorded_run(ledger, tmp_path, "before", 10, coerced=20)
        fix = ledger.add_fix(failure, "parse the action tag", "coercion_rate", "down", 0.1, before)
        fewer, _ = recorded_run(ledger, tmp_path, "fewer", 10, coerced=2)
        result = verify_fix(ledger, fix, fewer, **SETTINGS)
        assert result["verified"] is True and result["verdict"]["word"] == "regression"  # the rate went down
        c = result["comparison"]
        assert (c["control_rate"], c["treatment_rate"], c["b"], c["c"]) == (pytest.approx(0.15), pytest.approx(0.015), 0, 18)
        assert "coercion_rate 0.150 -> 0.015" in result["detail"] and "sign test" in result["detail"]
        assert "paired n=40 of 40" in result["detail"]
        again = ledger.add_fix(failure, "another parser", "coercion_rate", "down", None, before)
        same, _ = recorded_run(ledger, tmp_path, "same", 30, coerced=20)
        moved_success_only = verify_fix(ledger, again, same, **SETTINGS)
        assert moved_success_only["verified"] is False and moved_success_only["comparison"]["b"] == 0
        assert moved_success_only["comparison"]["c"] == 0  # coercion never moved; success did (10 -> 30)
        outage = ledger.add_failure("an API outage left games unmeasured", "wasted-compute")
        down, _ = recorded_run(ledger, tmp_path, "down", 10, unmeasured=12)
        retry = ledger.add_fix(outage, "retry with backoff", "unmeasured_rate", "down", None, down)
        up, _ = recorded_run(ledger, tmp_path, "up", 10)
        judged = verify_fix(ledger, retry, up, **SETTINGS)
        assert judged["verified"] is True and judged["comparison"]["c"] == 12 and judged["comparison"]["n_dropped"] == 0


def test_a_fix_is_verified_only_by_a_run_begun_after_it(skillos_home, tmp_path):
    """The other arm of the same experiment, finished before the failure and its fix were
    recorded, ran without the fix: it verifies nothing, on the CLI or the API, and no verdict is
    written; nor does the run before the fix. A run begun after the fix does."""
    import time

    from skillos.evals.verify import verify_fix

    with Ledger() as ledger:
        before, _ = recorded_run(ledger, tmp_path, "before", 10)
        other_arm, _ = recorded_run(ledger, tmp_path, "other-arm", 30)
        time.sleep(1.1)  # the ledger's clock counts seconds
        failure = ledger.add_failure("retrieval ignored the body", "harness-bug")
        fix = ledger.add_fix(failure, "index the body", "success_rate", "up", None, before)
        with pytest.raises(LedgerError, match=rf"run #{before} is its run before"):
            verify_fix(ledger, fix, before, **SETTINGS)
    refused = run_cli("ledger", "verify-fix", str(fix), "--after", str(other_arm))
    assert refused.returncode == 2 and "Traceback" not in refused.stderr  # a mistake in the input
    assert f"fix #{fix}: run #{other_arm} began at" in refused.stderr and "before the fix was recorded" in refused.stderr
    with Ledger() as ledger:
        assert ledger.fix(fix).get("verdict") is None and ledger.failure(failure)["status"] == "open"
        after, _ = recorded_run(ledger, tmp_path, "after", 30)
        assert verify_fix(ledger, fix, after, **SETTINGS)["verified"] is True
