"""The ledger's registry, failure ledger and CLI (the spellings scripts and skills call)."""

import csv
import io
import json

import pytest

from conftest import run_cli
from skillos.ledger import Ledger, LedgerError, taxonomy
from skillos.ledger.stats import failure_stats


def cli_json(*args):
    result = run_cli(*args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_taxonomy_ships_seven_categories_and_fourteen_modes():
    assert list(taxonomy.CATEGORIES) == ["harness-bug", "wrong-claim", "wasted-compute",
                                         "bad-reasoning", "process", "statistical", "near-miss"]
    assert len(taxonomy.MODES) == 14 and all(taxonomy.MODES.values())
    assert "sentinel that does not say why" in taxonomy.MODES["silent-sentinel"]


def test_cli_spellings_and_skillos_home(skillos_home):
    added = cli_json("ledger", "failures", "add", "--what", "rewards measured on 1 of 9 positions",
                     "--category", "harness-bug", "--mode", "partial-denominator",
                     "--mode", "silent-sentinel", "--cost-gpu-hours", "40", "--gate", "3")
    assert added["modes"] == ["partial-denominator", "silent-sentinel"]
    assert (skillos_home / "ledger.db").is_file()  # honours SKILLOS_HOME
    cli_json("ledger", "failures", "add", "--what", "GPUs idle for days", "--category",
             "wasted-compute", "--kind", "operational", "--cost-gpu-hours", "282",
             "--detected-by", "person")
    listed = cli_json("ledger", "failures", "list")
    assert [f["id"] for f in listed["failures"]] == [1, 2] and (listed["shown"], listed["of"]) == (2, 2)
    stats = cli_json("ledger", "stats")
    assert stats["failures"] == 2 and stats["by_category"] == {"harness-bug": 1, "wasted-compute": 1}
    assert stats["cost"]["gpu_hours"] == 322 and stats["cost"]["gpu_hours_measured_on"] == 2
    assert stats["documented"] == {"n": 1, "of": 2, "share": 0.5,
                                   "definition": stats["documented"]["definition"]}
    assert cli_json("ledger", "experiments", "list") == []
    assert [f["id"] for f in cli_json("ledger", "failures", "search", "idle")] == [2]
    bad = run_cli("ledger", "failures", "add", "--what", "x", "--category", "oops")
    assert bad.returncode == 2 and "unknown category 'oops'" in bad.stderr
    bad = run_cli("ledger", "failures", "add", "--what", "x", "--category", "process", "--mode", "nope")
    assert bad.returncode == 2 and "unknown mode 'nope'" in bad.stderr
    assert cli_json("ledger", "failures", "list")["of"] == 2  # refused adds wrote nothing


def test_export_and_invalidate_from_the_cli():
    run_cli("ledger", "failures", "add", "--what", "a, with comma", "--category", "process")
    rows = list(csv.DictReader(io.StringIO(run_cli("ledger", "export", "failures", "--format",
                                                   "csv").stdout)))
    assert rows[0]["what"] == "a, with comma"
    jsonl = run_cli("ledger", "export", "failures").stdout.splitlines()
    assert json.loads(jsonl[0])["category"] == "process"
    done = run_cli("ledger", "invalidate", "failures", "1", "--reason", "duplicate of an older row")
    assert done.returncode == 0
    (row,) = cli_json("ledger", "failures", "list")["failures"]
    assert row["valid"] is False and "duplicate" in row["invalid_reason"]
    assert cli_json("ledger", "stats")["retracted_or_invalid"] == 1


def test_status_changes_keep_history(tmp_path):
    with Ledger(tmp_path / "l.db") as ledger:
        fid = ledger.add_failure("stale baseline", "statistical", ["stale-control"])
        ledger.set_failure_status(fid, "fixed", "baseline remeasured")
        row = ledger.failure(fid)
        assert row["status"] == "fixed"
        assert [c["kind"] for c in row["corrections"]] == ["status"]
        assert ledger.rows("failures")[0]["status"] == "open"  # the original row is untouched
        with pytest.raises(LedgerError, match="unknown status"):
            ledger.set_failure_status(fid, "gone", "x")


def test_overrides_are_recorded_as_operational_failures(tmp_path):
    with Ledger(tmp_path / "l.db") as ledger:
        eid = ledger.add_experiment("e")
        ledger.add_override(1, "learning_rate", "single-GPU budget", "person", eid)
        (failure,) = ledger.failures()
        assert failure["kind"] == "operational" and failure["detected_by"] == "gate"
        assert "single-GPU budget" in failure["what"]
        with pytest.raises(LedgerError, match="needs a reason"):
            ledger.add_override(1, "lr", " ", "agent")


def test_goal_is_set_by_people_only(tmp_path):
    with Ledger(tmp_path / "l.db") as ledger:
        with pytest.raises(LedgerError, match="set by a person"):
            ledger.set_goal("maximize the number", "agent")
        ledger.set_goal("reproduce SkillOS on ALFWorld", "person")
        assert ledger.goal()["text"] == "reproduce SkillOS on ALFWorld"
    # the CLI sets it only at an interactive terminal (tests/test_approval.py types it in a pty)
    refused = run_cli("ledger", "goal", "new goal")
    assert refused.returncode == 1 and "interactive terminal" in refused.stderr
    assert run_cli("ledger", "goal", "new goal", "--person").returncode == 2  # the old bypass is gone


def test_stats_without_failures_report_share_as_unmeasured():
    stats = failure_stats([])
    assert stats["failures"] == 0 and stats["documented"]["share"] is None


def test_a_crashed_eval_is_recorded_as_an_operational_failure(tmp_path, monkeypatch, game_cache):
    from skillos import config
    from skillos.evals import experiment

    def explode(*args, **kwargs):
        raise RuntimeError("worker lost")

    monkeypatch.setattr(experiment, "play_arm", explode)
    cfg = config.from_dict({"env": {"n_games": 2, "n_train_games": 2}, "eval": {"workers": 1}})
    with Ledger(tmp_path / "l.db") as ledger:
        with pytest.raises(RuntimeError):
            experiment.run_eval(cfg, tmp_path / "run", ledger=ledger)
        (failure,) = ledger.failures()
        assert failure["kind"] == "operational" and "worker lost" in failure["what"]
        exp = ledger.experiment(failure["experiment_id"])
        assert exp["status"] == "crashed"
        assert {r["status"] for r in exp["runs"]} == {"crashed"}


def test_conclusions_are_corrections_with_history():
    added = cli_json("ledger", "experiments", "add", "--name", "e1", "--hypothesis", "h")
    first = run_cli("ledger", "experiments", "conclude", str(added["id"]), "--text", "no effect (MDE 20 pts)")
    assert first.returncode == 0, first.stderr
    run_cli("ledger", "experiments", "conclude", str(added["id"]), "--text", "revised: +5 pts, n.s.")
    shown = cli_json("ledger", "experiments", "show", str(added["id"]))
    assert shown["status"] == "concluded" and shown["conclusion"] == "revised: +5 pts, n.s."
    assert [c["value"] for c in shown["corrections"] if c["kind"] == "conclusion"] == \
        ["no effect (MDE 20 pts)", "revised: +5 pts, n.s."]


@pytest.mark.parametrize("stopped, why", [(KeyboardInterrupt(), "stopped by KeyboardInterrupt"),
                                          (SystemExit(143), "stopped by SystemExit 143")])  # kill PID, in the CLI
def test_an_interrupted_eval_is_not_a_failure(tmp_path, monkeypatch, game_cache, stopped, why):
    from skillos import config
    from skillos.evals import experiment

    def stop(*args, **kwargs):
        raise stopped

    monkeypatch.setattr(experiment, "play_arm", stop)
    cfg = config.from_dict({"env": {"n_games": 2, "n_train_games": 2}, "eval": {"workers": 1}})
    with Ledger(tmp_path / "l.db") as ledger:
        with pytest.raises(type(stopped)):
            experiment.run_eval(cfg, tmp_path / "run", ledger=ledger)
        assert ledger.failures() == []
        (exp,) = ledger.experiments()
        assert exp["status"] == "interrupted"
        runs = ledger.experiment(exp["id"])["runs"]
        assert {(r["status"], r["detail"]) for r in runs} == {("interrupted", why)}


def test_an_eval_stopped_by_sigterm_is_recorded_as_interrupted(tmp_path, skillos_home, game_cache):
    """`kill PID` on a running `skillos eval`: its runs and experiment end as interrupted, never
    left running."""
    import os
    import signal
    import subprocess
    import sys

    from conftest import ROOT

    db = skillos_home / "ledger.db"
    proc = subprocess.Popen([sys.executable, "-m", "skillos", "eval", str(ROOT / "evals" / "configs" / "quickstart.yaml"),
                             "--n-games", "12", "--n-train-games", "12", "--out", str(tmp_path / "run")],
                            env={**os.environ, "SKILLOS_HOME": str(skillos_home)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen = []  # its progress lines, read as they come: the first held-out game played means its runs are live
    for line in proc.stderr:
        seen.append(line)
        if "eval games: " in line:
            break
    assert any("eval games: " in line for line in seen), "".join(seen)[-2000:]
    proc.send_signal(signal.SIGTERM)
    _, rest = proc.communicate(timeout=120)
    err = "".join(seen) + rest
    assert proc.returncode == 143, err[-2000:]
    assert "Traceback" not in err and "closed_loop · eval games: 12/12" not in err  # stopped mid-run
    with Ledger(db) as ledger:
        (exp,) = ledger.experiments()
        assert exp["status"] == "interrupted" and ledger.failures() == []
        runs = ledger.experiment(exp["id"])["runs"]
        assert len(runs) == 2 and {(r["status"], r["detail"]) for r in runs} == {("interrupted", "stopped by SystemExit 143")}


def test_unwritable_skillos_home_is_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    result = run_cli("ledger", "failures", "list", env={"SKILLOS_HOME": str(blocker / "home")})
    assert result.returncode == 2 and "cannot create the ledger folder" in result.stderr
    assert "Traceback" not in result.stderr
