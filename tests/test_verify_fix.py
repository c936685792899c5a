"""Gate 6: a fix is verified only if the number moves; otherwise the diagnosis is reopened."""

import hashlib
import json

import pytest

from conftest import run_cli
from skillos.ledger import Ledger, LedgerError

SETTINGS = dict(alpha=0.05, power=0.8, n_boot=1000)


def recorded_run(ledger, folder, name, successes):
    """A run whose per-game JSONL has 40 games, the first `successes` of them won."""
    path = folder / f"{name}.jsonl"
    rows = [{"arm": "closed_loop", "phase": "eval", "game_id": f"g{i:02d}", "success": i < successes,
             "unmeasured": False} for i in range(40)]
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
        after, _ = recorded_run(ledger, tmp_path, "after", 30)
    added = run_cli("ledger", "fixes", "add", "--failure", str(failure), "--description",
                    "index the body", "--direction", "up", "--expected", "0.2", "--before", str(before),
                    "--json")
    assert added.returncode == 0, added.stderr
    fix = json.loads(added.stdout)["id"]
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
        after, _ = recorded_run(ledger, tmp_path, "after", 11)
        fix = ledger.add_fix(failure, "patched the parser", "success_rate", "up", 0.1, before)
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
        after, _ = recorded_run(ledger, tmp_path, "after", 30)
        fix = ledger.add_fix(failure, "y", "success_rate", "up", None, before)
        path.write_text(path.read_text().replace('"success": false', '"success": true'))
        with pytest.raises(LedgerError, match="changed since it was recorded"):
            verify_fix(ledger, fix, after, **SETTINGS)
        assert ledger.fix(fix).get("verdict") is None  # no verdict from tampered evidence
