"""Postmortems generated from a ledger the test populates."""

from conftest import run_cli
from skillos.ledger import Ledger
from skillos.ledger.postmortem import postmortem


def populate(path):
    ledger = Ledger(path)
    ledger.set_goal("reproduce SkillOS on ALFWorld", "person")
    exp = ledger.add_experiment("grpo-curator", "GRPO curator beats the static repo", "success rate")
    run = ledger.start_run(exp, "closed_loop", {"lr": 1e-6}, seed=3)
    ledger.end_run(run, "crashed", "CUDA OOM at step 12")
    ledger.add_failure("rewards measured on 1 of 9 positions", "harness-bug",
                       ["partial-denominator", "silent-sentinel"], cost_gpu_hours=40.0,
                       gate="3", experiment_id=exp, run_id=run)
    ledger.add_failure("8 GPUs idle for 2 days", "wasted-compute", ["job-not-box"],
                       kind="operational", cost_gpu_hours=384.0, cost_wall_hours=48.0,
                       detected_by="person", gate="7", experiment_id=exp)
    fixed = ledger.add_failure("stale baseline reused", "statistical", ["stale-control"],
                               experiment_id=exp)
    ledger.set_failure_status(fixed, "verified", "control remeasured same week")
    ledger.add_gate_result(1, "learning_rate", "PASS", "training.lr", "1e-6", "1e-6", exp, run)
    ledger.add_gate_result(3, "positions_measured", "FAIL", "eval.positions", "1", "9", exp, run)
    ledger.add_override(3, "positions_measured", "debug run, not evidence", "person", exp)
    other = ledger.add_experiment("old-baseline")
    ledger.correct("experiments", other, "invalidate", "measured on old code")
    return ledger, exp, run


def test_experiment_postmortem_has_every_section(tmp_path):
    ledger, exp, run = populate(tmp_path / "l.db")
    text = postmortem(ledger, experiment_id=exp)
    assert text.startswith("# Postmortem: experiment #1 grpo-curator")
    assert "Project goal: reproduce SkillOS on ALFWorld" in text
    assert "run #1 crashed: CUDA OOM at step 12" in text  # timeline
    assert "4 failures (0 retracted or invalid, not counted)." in text  # 3 + the override's
    assert "| harness-bug | 1 |" in text and "| partial-denominator | 1 |" in text
    assert "424.0 GPU-hours (known for 2 of 4 failures)" in text
    assert "- gate 1: 1 PASS" in text and "- gate 3: 1 FAIL" in text
    assert "gate 3 positions_measured, by person: debug run, not evidence" in text
    open_section = text.split("## Open items")[1]
    assert "rewards measured on 1 of 9 positions" in open_section
    assert "stale baseline reused" not in open_section  # verified
    assert "old-baseline" not in text  # another experiment is out of scope


def test_whole_ledger_and_since_scopes(tmp_path):
    ledger, _, _ = populate(tmp_path / "l.db")
    whole = postmortem(ledger)
    assert "INVALID (invalidate: measured on old code)" in whole
    assert "No events" not in whole
    future = postmortem(ledger, since="2999-01-01")
    assert "0 failures" in future and "(none)" in future


def test_postmortem_cli(skillos_home, tmp_path):
    ledger, exp, run = populate(skillos_home / "ledger.db")
    ledger.close()
    shown = run_cli("postmortem", str(exp))
    assert shown.returncode == 0 and "## What each gate did" in shown.stdout
    out = tmp_path / "pm.md"
    assert run_cli("postmortem", "--run", str(run), "--out", out).returncode == 0
    assert out.read_text().startswith("# Postmortem: run #1")
    bad = run_cli("postmortem", "--since", "yesterday")
    assert bad.returncode == 2 and "expected a date" in bad.stderr
    missing = run_cli("postmortem", "99")
    assert missing.returncode == 2 and "no experiment with id 99" in missing.stderr
