"""The public library API owns the gates: every entry point refuses a failing config itself
(GateRefused, carrying the gates' report) before any game is played, and the CLI is a thin
renderer over it, so both give the same report for the same config."""

import json

import pytest

import skillos
from conftest import ROOT, run_cli
from skillos.ledger import Ledger

QUICKSTART = ROOT / "evals" / "configs" / "quickstart.yaml"
SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"
OPTIMIZE = ROOT / "training" / "configs" / "optimize-quickstart.yaml"
# An error budget of 50%: an outage would pass as a result (gate 2, a static FAIL).
FAILING = ["eval.max_error_rate=0.5", "env.n_games=4", "env.n_train_games=4"]


def assert_refused(call, skillos_home, out=None):
    with pytest.raises(skillos.GateRefused) as refused:
        call()
    report = refused.value.report
    assert [r.check for r in report.failed] == ["error-budget"], report.to_dict()
    assert "error-budget" in str(refused.value) and report.exit_code == 1
    assert out is None or not out.exists()  # nothing written: no game was played
    if (skillos_home / "ledger.db").exists():
        with Ledger(skillos_home / "ledger.db") as ledger:
            assert ledger.rows("runs") == []  # no run started
    return report


def test_every_public_function_refuses_a_failing_config(tmp_path, game_cache, skillos_home, monkeypatch):
    from skillos.training.common import launch
    from skillos.training.textopt import optimize

    def must_not_run(*args, **kwargs):
        raise AssertionError("a refused launch ran")

    monkeypatch.setattr(optimize, "run", must_not_run)
    monkeypatch.setattr(launch, "launch", must_not_run)
    out = tmp_path / "run"
    repo = tmp_path / "step-10"
    repo.mkdir()
    eval_cfg = skillos.load(QUICKSTART, FAILING)
    assert_refused(lambda: skillos.check(eval_cfg), skillos_home)
    assert_refused(lambda: skillos.compare(eval_cfg, ["closed_loop"]), skillos_home)
    assert_refused(lambda: skillos.evaluate(eval_cfg, out=out), skillos_home, out)
    assert_refused(lambda: skillos.sweep(eval_cfg, executor="heuristic", repos=[repo], out=out),
                   skillos_home, out)
    assert_refused(lambda: skillos.optimize(skillos.load(OPTIMIZE, FAILING), out=out), skillos_home, out)
    assert_refused(lambda: skillos.train(skillos.load(SMOKE, ["eval.max_error_rate=0.5"])), skillos_home)
    # the static plan of a training launch is refused the same way, and still carries the plan
    with pytest.raises(skillos.GateRefused) as refused:
        skillos.train(skillos.load(SMOKE, ["eval.max_error_rate=0.5"]), dry_run=True)
    assert refused.value.detail["plan"]["backend"] == "local"
    with Ledger(skillos_home / "ledger.db") as ledger:  # every launch recorded why it was refused
        refusals = [g for g in ledger.rows("gate_results") if g["check_name"] == "error-budget"]
        assert {g["status"] for g in refusals} == {"FAIL"} and len(refusals) == 4


def test_the_cli_and_the_api_give_the_same_report(tmp_path, skillos_home):
    cli = run_cli("gate", "check", QUICKSTART, "--json", *sum((["--set", s] for s in FAILING), []))
    assert cli.returncode == 1, cli.stderr
    with pytest.raises(skillos.GateRefused) as refused:
        skillos.check(skillos.load(QUICKSTART, FAILING))
    assert json.loads(cli.stdout) == json.loads(json.dumps(refused.value.report.to_dict(), default=str))
    passing = run_cli("gate", "check", QUICKSTART, "--json", "--set", "env.n_games=4")
    assert json.loads(passing.stdout) == skillos.check(skillos.load(QUICKSTART, ["env.n_games=4"])).to_dict()


def test_set_is_validated_like_the_file(tmp_path):
    bad = run_cli("gate", "check", QUICKSTART, "--set", "eval.alpa=0.1")
    assert bad.returncode == 2 and "eval.alpa: unknown key (did you mean 'alpha'?)" in bad.stderr
    assert bad.stderr.strip().count("\n") == 0
    typed = run_cli("gate", "check", QUICKSTART, "--set", "env.n_games=many")
    assert typed.returncode == 2 and "env.n_games: expected int" in typed.stderr
    shape = run_cli("gate", "check", QUICKSTART, "--set", "no-equals-sign")
    assert shape.returncode == 2 and "expected KEY=VALUE" in shape.stderr
    assert skillos.load(QUICKSTART, ["eval.control.max_age_days=2"]).eval.control.max_age_days == 2.0


def test_the_config_hash_leaves_out_operational_keys():
    base = skillos.load(QUICKSTART)
    same = skillos.load(QUICKSTART, ["eval.workers=3", "eval.concurrency=8", "eval.output_dir=elsewhere",
                                     "compute.watchdog=false"])
    other = skillos.load(QUICKSTART, ["env.seed=1"])
    assert base.hash() == same.hash() and base.hash() != other.hash()


def test_an_aborted_arm_has_its_own_exit_code():
    from skillos.errors import SkillosError
    from skillos.evals.runner import ArmAborted

    assert ArmAborted("x").exit_code not in (SkillosError("x").exit_code, skillos.GateRefused("x").exit_code, 0)


@pytest.mark.parametrize("out", ["/proc/skillos-out", "/sys/skillos-out", "{file}/inside"])
def test_an_output_folder_that_cannot_be_made_is_one_line_before_the_gates(out, tmp_path, skillos_home):
    from skillos import api
    from skillos.errors import SkillosError

    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    out = out.format(file=a_file)
    cfg = api.load(QUICKSTART, ["env.n_games=4", "env.n_train_games=4"])
    with pytest.raises(SkillosError, match="cannot create the output folder") as refused:
        api.evaluate(cfg, out=out)
    assert "\n" not in str(refused.value) and not (skillos_home / "ledger.db").exists()
    made = tmp_path / "new" / "deeper" / "run"
    from skillos.evals.run_folder import check_out

    assert check_out(made) is False and not (tmp_path / "new").exists()  # the probe leaves nothing behind
