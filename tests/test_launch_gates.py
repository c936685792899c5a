"""Every launch command runs the gates first, refuses a failing config, and records the gate
results and any override (with its reason, as a process failure) in the ledger."""

import pytest
import yaml
from typer.testing import CliRunner

from conftest import ROOT, run_cli
from skillos import cli, gates
from skillos import checking
from skillos.gates import core
from skillos.ledger import Ledger

QUICKSTART = ROOT / "evals" / "configs" / "quickstart.yaml"
SMALL = ["--n-games", "4", "--n-train-games", "4"]


def write_config(tmp_path, **eval_changes):
    data = yaml.safe_load(QUICKSTART.read_text())
    data["eval"].update(eval_changes)
    path = tmp_path / "exp.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_eval_refuses_a_failing_config_and_records_why(tmp_path, game_cache, skillos_home):
    config = write_config(tmp_path, max_error_rate=0.5)  # an outage would pass as a result
    out = tmp_path / "run"
    result = run_cli("eval", config, *SMALL, "--out", out)
    assert result.returncode == 1
    assert "FAIL gate 2   error-budget · eval.max_error_rate: seen 0.5, expected <= 0.02" in result.stderr
    assert "eval refused by the launch gates: 1 check(s) failed (error-budget)" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()
    with Ledger(skillos_home / "ledger.db") as ledger:
        recorded = {(g["check_name"], g["status"]) for g in ledger.rows("gate_results")}
        assert ("error-budget", "FAIL") in recorded and ("watchdog", "PASS") in recorded
        assert "sentinels" not in {name for name, _ in recorded}  # refused before a game was played
        assert ledger.rows("runs") == [] and ledger.rows("overrides") == []
        (exp,) = ledger.experiments()  # refused before it ran: said so, not left `planned`
        assert exp["status"] == "refused" and "eval refused by the launch gates (error-budget)" in \
            [c["reason"] for c in exp["corrections"] if c["kind"] == "status"]


def test_an_override_is_recorded_as_a_process_failure(tmp_path, game_cache, skillos_home):
    config = write_config(tmp_path, max_error_rate=0.5)
    reason = "pilot against a flaky endpoint; results not for claims"
    assert run_cli("eval", config, *SMALL, "--out", tmp_path / "refused").returncode == 1  # first refused
    result = run_cli("eval", config, *SMALL, "--out", tmp_path / "run",
                     "--override", f"error-budget={reason}")
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"OVERRIDDEN: {reason}" in result.stderr
    with Ledger(skillos_home / "ledger.db") as ledger:
        (override,) = ledger.rows("overrides")
        assert override["check_name"] == "error-budget" and override["gate"] == 2
        assert override["reason"] == f"eval: {reason}"
        process = [f for f in ledger.failures() if f["category"] == "process"]
        assert len(process) == 1 and "error-budget overridden" in process[0]["what"]
        assert len(ledger.rows("runs")) == 2
        (exp,) = ledger.experiments()  # refused, then launched with the override and measured
        assert [c["value"] for c in exp["corrections"] if c["kind"] == "status"][:2] == ["refused", "planned"]
        assert exp["status"] == "measured"
    postmortem = run_cli("postmortem")
    assert "override of gate 2 error-budget" in postmortem.stdout and reason in postmortem.stdout


@pytest.mark.parametrize("value, message", [
    ("no-such-check=because", "--override no-such-check: no such check"),
    ("error-budgt=because", "did you mean 'error-budget'?"),
    ("error-budget", 'expected CHECK="reason" with a reason'),
    ("error-budget=  ", 'expected CHECK="reason" with a reason'),
])
def test_bad_overrides_are_one_line_errors(tmp_path, game_cache, value, message):
    result = run_cli("eval", write_config(tmp_path), *SMALL, "--out", tmp_path / "run",
                     "--override", value)
    assert result.returncode == 2 and message in result.stderr
    assert result.stderr.strip().count("\n") == 0


@pytest.mark.parametrize("command", cli.LAUNCHERS)
def test_every_launch_command_refuses_on_a_failing_check(command, tmp_path, game_cache,
                                                         monkeypatch, skillos_home):
    def always_fails(ctx):
        return checking.Result("planted", (7,), "FAIL", detail="planted by the test")

    real = core.checks
    monkeypatch.setattr(core, "checks", lambda phase: real(phase) + ([always_fails] if phase == "static" else []))
    repo = tmp_path / "step-10"
    repo.mkdir()
    out = tmp_path / "run"
    args = {"eval": [str(write_config(tmp_path)), *SMALL, "--out", str(out)],
            "quickstart": [*SMALL, "--out", str(out)],
            "sweep": [str(write_config(tmp_path)), "--repo", str(repo), "--executor", "heuristic",
                      *SMALL, "--out", str(out)],
            "train": [str(ROOT / "training" / "configs" / "cpu-smoke.yaml")],
            "optimize": [str(ROOT / "training" / "configs" / "optimize-quickstart.yaml"), "--out", str(out),
                         "--json"]}[command]
    # What is under test is the refusal; test_train.py and test_optimize.py run these for real.
    if command == "train":
        from skillos.training.curator import trainer

        def trained(cfg, ledger, echo=None):
            out.mkdir()
            return {"run_id": None, "output_dir": str(out), "checkpoints": [], "steps": []}

        monkeypatch.setattr(trainer, "train", trained)
    if command == "optimize":
        from skillos.training.textopt import optimize

        def optimized(cfg, out_dir, ledger, echo=None, **_):
            out.mkdir()
            return {"verdict": "not run"}

        monkeypatch.setattr(optimize, "run", optimized)
    result = CliRunner().invoke(cli.app, [command, *args])
    assert isinstance(result.exception, gates.GateRefused), result.output
    assert "(planted)" in str(result.exception) and not out.exists()
    result = CliRunner().invoke(cli.app, [command, *args, "--override", "planted=the test says so"])
    assert result.exit_code == 0, result.output
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert [o["check_name"] for o in ledger.rows("overrides")] == ["planted"]


def test_gpus_torch_sees_without_nvidias_driver_files_make_a_gpu_launch(tmp_path, monkeypatch):
    """ROCm or WSL2: no /proc/driver/nvidia, yet torch sees devices. The device predicate asks torch
    there, so an hf launch is a GPU launch (approval and canary gates apply), not 'the local CPU'."""
    import sys

    from skillos import config, devices

    monkeypatch.delitem(sys.modules, "torch", raising=False)  # as in a fresh gate check (torch not imported)
    monkeypatch.setattr(devices, "_torch_count", lambda: 2)  # what torch.cuda.device_count() says on that box
    monkeypatch.setattr(devices, "OTHER_ACCELERATORS", (str(tmp_path / "missing"),))
    assert devices.cuda_devices() == 0  # no accelerator's files: torch is not asked (nor imported)
    (tmp_path / "kfd").write_text("")
    monkeypatch.setattr(devices, "OTHER_ACCELERATORS", (str(tmp_path / "kfd"),))
    assert devices.cuda_devices() == 2
    assert devices.gpu_launch(config.load(ROOT / "training" / "configs" / "cpu-smoke.yaml"))
