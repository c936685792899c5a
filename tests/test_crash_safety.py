"""Nothing is trusted after a crash (class 3 of issue 24): `optimize --resume` checks its saved
state against itself, its history, its rejected memory, its incumbent and the ledger, and refuses
a mismatch in one line; damaged state, history, report, proposal and trace files are one-line
errors; a night killed mid-run is recorded as aborted; an adopt that crashed between its writes
can be completed or undone; refusals known before compute are made before any game is played."""

import json

import pytest
import yaml

from conftest import ROOT, run_cli
from skillos.errors import SkillosError
from skillos.ledger import Ledger
from skillos.training.textopt import optimize

SHIPPED = ROOT / "training" / "configs" / "optimize-quickstart.yaml"
VALIDATION = {f"v{i}": i % 2 == 0 for i in range(4)}
CALIBRATION = {"verdict": "reject", "mode": "paired", "reason": "aa", "mean_difference": 0.0, "se": 0.0,
               "threshold": 0.0, "n_tasks": 4, "n_paired": 4, "n_unmeasured": 0}


def tiny_config(tmp_path):
    import skillos

    data = yaml.safe_load(SHIPPED.read_text())
    data["env"].update(n_games=4, n_train_games=4)
    data["experiment"]["expected_effect"] = None
    data["optimize"].update(epochs=1, minibatch_size=2, n_validation=4)
    path = tmp_path / "optimize.yaml"
    path.write_text(yaml.safe_dump(data))
    return skillos.load(path)


def entry(c, verdict):
    return {"epoch": 0, "step": c - 1, "candidate": c, "edits": [f"add s{c}"], "verdict": verdict}


def saved_run(tmp_path, ledger=None):
    """A killed optimize run's folder as the loop leaves it after 2 of 2 steps: candidate 1
    accepted, candidate 2 rejected (total 2 steps of 1 epoch)."""
    cfg, out = tiny_config(tmp_path), tmp_path / "run"
    (out / "incumbent").mkdir(parents=True)
    (out / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    run_id = None
    if ledger is not None:
        from skillos.ledger.experiments import record_experiment

        run_id = ledger.start_run(record_experiment(ledger, cfg), "optimize", config=cfg.to_dict())
        for c in (1, 2):
            ledger.add_candidate(run_id, epoch=0, step=c - 1, verdict="accept" if c == 1 else "reject")
    state = {"schema_version": 1, "next": 2, "tried": 2, "accepted": 1, "run_id": run_id,
             "seed_validation": VALIDATION, "incumbent_validation": VALIDATION, "calibration": CALIBRATION}
    (out / "state.json").write_text(json.dumps(state))
    (out / "history.jsonl").write_text(json.dumps(entry(1, "accept")) + "\n" + json.dumps(entry(2, "reject")) + "\n")
    (out / "rejected.json").write_text(json.dumps([{"edit": "add s2", "verdict": "reject", "epoch": 0, "step": 1}]))
    return cfg, out, state


def resume(cfg, out, ledger=None):
    return optimize._resume_state(cfg, out, ledger, total=2, steps_per_epoch=2)


def test_a_saved_state_that_matches_resumes(tmp_path):
    cfg, out, state = saved_run(tmp_path)
    assert resume(cfg, out)["tried"] == 2


def _state(**change):
    def apply(out):
        s = json.loads((out / "state.json").read_text())
        s.update(change)
        (out / "state.json").write_text(json.dumps(s))
    return apply


def _write(name, text):
    return lambda out: (out / name).write_text(text)


DAMAGE = [
    ("state not json", _write("state.json", "{not json"), "state.json"),
    ("state a list", _write("state.json", "[]"), "state.json"),
    ("state cut off", _write("state.json", '{"next": 2, "tried"'), "state.json"),
    ("state deep", _write("state.json", "[" * 5000 + "]" * 5000), "state.json"),
    ("next negative", _state(next=-1), "next"),
    ("next past the end", _state(next=9), "past"),
    ("next not a number", _state(next="2"), "next"),
    ("next a bool", _state(next=True), "next"),
    ("tried past next", _state(next=1, tried=2), "add up"),
    ("accepted past tried", _state(accepted=3), "add up"),
    ("run id text", _state(run_id="7"), "run_id"),
    ("validation a list", _state(incumbent_validation=["v0"]), "incumbent_validation"),
    ("validation outcome text", _state(seed_validation={"v0": "yes"}), "seed_validation"),
    ("validation tasks differ", _state(seed_validation={"x": True}), "differ"),
    ("no calibration", _state(calibration=None), "calibration"),
    ("newer schema", _state(schema_version=99), "newer"),
    ("history misses a candidate", _write("history.jsonl", json.dumps(entry(2, "reject")) + "\n"), "history"),
    ("history repeats a candidate", _write("history.jsonl", json.dumps(entry(1, "accept")) + "\n" +
                                           json.dumps(entry(1, "accept")) + "\n"), "history"),
    ("history damaged mid-file", _write("history.jsonl", "{bad\n" + json.dumps(entry(2, "reject")) + "\n"), "history"),
    ("history index as text", _write("history.jsonl", json.dumps({**entry(1, "accept"), "candidate": "1"}) + "\n"),
     "history"),
    ("history accepts another count", _write("history.jsonl", json.dumps(entry(1, "reject")) + "\n" +
                                             json.dumps(entry(2, "reject")) + "\n"), "accepted"),
    ("rejected memory damaged", _write("rejected.json", "{"), "rejected"),
    ("rejected memory of another shape", _write("rejected.json", json.dumps([{"edit": 1}])), "rejected"),
    ("rejected memory count differs", _write("rejected.json", "[]"), "rejected"),
    ("incumbent gone", lambda out: (out / "incumbent").rmdir(), "incumbent"),
]


@pytest.mark.parametrize("name, damage, words", DAMAGE, ids=[d[0] for d in DAMAGE])
def test_resume_refuses_state_that_does_not_match_in_one_line(tmp_path, name, damage, words):
    cfg, out, _ = saved_run(tmp_path)
    damage(out)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with pytest.raises(SkillosError) as err:
        resume(cfg, out)
    assert "\n" not in str(err.value) and words in str(err.value), str(err.value)
    assert before == {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}  # nothing rewritten


def test_a_candidate_logged_after_the_last_saved_state_is_dropped_everywhere(tmp_path, skillos_home):
    with Ledger(skillos_home / "ledger.db") as ledger:
        cfg, out, state = saved_run(tmp_path, ledger)
        # killed after candidate 3 was logged and recorded, before its state was saved
        with open(out / "history.jsonl", "a") as fh:
            fh.write(json.dumps({**entry(3, "reject"), "epoch": 0, "step": 2}) + "\n")
        ledger.add_candidate(state["run_id"], epoch=0, step=2, verdict="reject")
        assert resume(cfg, out, ledger)["tried"] == 2
        assert [json.loads(x)["candidate"] for x in (out / "history.jsonl").read_text().splitlines()] == [1, 2]
        rows = [ledger.corrected("candidates", c) for c in ledger.rows("candidates")]
        assert [c["valid"] for c in rows] == [True, True, False] and "played again" in rows[2]["invalid_reason"]


LEDGER_DAMAGE = [
    ("run missing", lambda lg, s, out: _state(run_id=999)(out), "not in"),
    ("no run at all", lambda lg, s, out: _state(run_id=None)(out), "no ledger run"),
    ("other experiment", lambda lg, s, out: lg.db.execute("UPDATE experiments SET name = 'other'"), "belongs"),
    ("run finished", lambda lg, s, out: lg.end_run(s["run_id"], "finished"), "finished"),
    ("fewer candidates", lambda lg, s, out: lg.correct("candidates", 2, "invalidate", "x"), "records 1"),
]


@pytest.mark.parametrize("name, damage, words", LEDGER_DAMAGE, ids=[d[0] for d in LEDGER_DAMAGE])
def test_resume_refuses_state_the_ledger_does_not_match(tmp_path, skillos_home, name, damage, words):
    with Ledger(skillos_home / "ledger.db") as ledger:
        cfg, out, state = saved_run(tmp_path, ledger)
        damage(ledger, state, out)
        with pytest.raises(SkillosError) as err:
            resume(cfg, out, ledger)
        assert "\n" not in str(err.value) and words in str(err.value), str(err.value)


@pytest.mark.alfworld
def test_refusals_known_before_compute_are_made_before_any_game(tmp_path, skillos_home, game_cache, monkeypatch):
    pytest.importorskip("alfworld")
    import skillos
    from skillos.evals import runner
    from skillos.evals.arms import load_games
    from skillos.gates import dryrun

    def no_game(*a, **k):
        raise AssertionError("a game was played before the refusal")

    cfg = tiny_config(tmp_path)
    test_games = load_games(cfg, cfg.env.split, cfg.env.n_games)
    with Ledger(skillos_home / "ledger.db") as ledger:
        split = optimize.SealedSplit(test_games, tmp_path / "x.sealed", ledger, cfg.experiment.name)
        ledger.read_sealed(cfg.experiment.name, split.content_hash, "an earlier run", "elsewhere", "person")
    monkeypatch.setattr(runner, "play", no_game)
    monkeypatch.setattr(dryrun, "play", no_game, raising=False)
    with pytest.raises(SkillosError, match="already read"):  # the sealed split: before the gates' dry run
        skillos.optimize(cfg, out=tmp_path / "fresh")
    (tmp_path / "b").mkdir()
    other_cfg, out, _ = saved_run(tmp_path / "b")
    (out / "config.yaml").write_text(yaml.safe_dump({**cfg.to_dict(), "experiment": {"name": "other"}}))
    with pytest.raises(SkillosError, match="config.yaml differs"):
        skillos.optimize(cfg, out=out, resume=True)
    eval_out = tmp_path / "eval"
    eval_out.mkdir()
    (eval_out / "config.yaml").write_text("experiment: {name: other}\n")
    with pytest.raises(SkillosError, match="config.yaml differs"):
        skillos.evaluate(skillos.load(ROOT / "evals" / "configs" / "quickstart.yaml"), out=eval_out, resume=True)


# -- sleep: a killed night, a crashed adopt ---------------------------------------------------------
def test_a_night_killed_mid_run_is_recorded_as_aborted(tmp_path, skillos_home):
    from skillos.safety import RunLock
    from skillos.training.textopt.sleep.stage import NIGHT, recover_nights, status

    home = tmp_path / "sleep"
    with Ledger(skillos_home / "ledger.db") as ledger:
        exp = ledger.add_experiment("sleep:notes")
        runs = [ledger.start_run(exp, "sleep-night") for _ in range(2)]
        for i, run in enumerate(runs):
            night = home / "nights" / f"n{i}"
            night.mkdir(parents=True)
            (night / NIGHT).write_text(json.dumps({"night": f"n{i}", "run_id": run, "experiment_id": exp}))
        alive = RunLock(home / "nights" / "n1").acquire()  # n1 is still running in another process
        try:
            assert recover_nights(home, ledger) == ["n0"]
        finally:
            alive.release()
        assert [r["status"] for r in ledger.rows("runs")] == ["aborted", "running"]
        nights = {n["night"]: n for n in status(home)["nights"]}
        assert nights["n0"]["status"] == "aborted" and "killed mid-run" in nights["n0"]["verdict"]
        assert recover_nights(home, ledger) == ["n1"]  # once its holder is gone


def _proposal(tmp_path):
    from skillos.training.textopt.sleep.stage import write_proposal

    live = tmp_path / "skills" / "notes" / "SKILL.md"
    live.parent.mkdir(parents=True)
    before = "---\nname: notes\ndescription: Write notes.\n---\n# Notes\n- be brief\n"
    after = before + "<!-- skillos-sleep:learned -->\n- add a summary\n<!-- /skillos-sleep:learned -->\n"
    live.write_text(before)
    report = {"night": "n1", "verdict": "v", "tasks": {"train": 1, "validation": 1, "test": 1}, "harvest_sessions": 1,
              "candidates": [], "budget": {"calls": 1, "max_calls": 2, "tokens": 1, "max_tokens": 2, "minutes": 0.1,
                                           "max_minutes": 1}}
    folder = write_proposal(tmp_path / "home", "n1", live, before, after, report, [])
    return folder, live, before, after


CRASH_AFTER = [1, 2, 3]  # write_atomic calls that succeed before the crash: journal, backup, skill


@pytest.mark.parametrize("crash_after", CRASH_AFTER)
@pytest.mark.parametrize("then", ["complete", "undo"])
def test_an_adopt_that_crashed_between_its_writes_can_be_completed_or_undone(tmp_path, monkeypatch, crash_after, then):
    from skillos.files import write_atomic as real
    from skillos.training.textopt.sleep import stage

    folder, live, before, after = _proposal(tmp_path)
    calls = []

    def crashing(path, data):
        calls.append(path)
        if len(calls) > crash_after:
            raise KeyboardInterrupt("killed")
        return real(path, data)

    monkeypatch.setattr(stage, "write_atomic", crashing)  # every write of an adopt is stage's
    with pytest.raises(KeyboardInterrupt):
        stage.adopt(folder, tmp_path / "home")
    monkeypatch.setattr(stage, "write_atomic", real)
    assert stage.status(tmp_path / "home")["proposals"][0]["unfinished_adopt"] is True
    meta = stage.adopt(folder, tmp_path / "home", undo=(then == "undo"))
    assert live.read_text() == (after if then == "complete" else before)
    assert not (folder / stage.JOURNAL).exists()
    assert bool(meta.get("adopted_at")) is (then == "complete")
    if then == "complete":
        assert open(meta["backup"]).read() == before
        undone = stage.adopt(folder, tmp_path / "home", undo=True)  # and an adopt can always be undone
        assert live.read_text() == before and undone["adopted_at"] is None


def test_an_adopt_never_overwrites_a_skill_changed_in_between(tmp_path):
    from skillos.training.textopt.sleep import stage

    folder, live, before, after = _proposal(tmp_path)
    live.write_text(before + "- edited by hand\n")
    with pytest.raises(SkillosError, match="changed since"):
        stage.adopt(folder, tmp_path / "home")
    with pytest.raises(SkillosError, match="not adopted"):
        stage.adopt(folder, tmp_path / "home", undo=True)


DAMAGED_FILES = [
    ("proposal.json", "{"), ("proposal.json", "[]"), ("proposal.json", json.dumps({"night": 1})),
    ("proposal.json", "[" * 100000 + "]" * 100000), ("adopt.journal.json", "{"),
    ("adopt.journal.json", json.dumps({"target": 5})),
]


@pytest.mark.parametrize("name, text", DAMAGED_FILES, ids=[f"{d[0]}-{i}" for i, d in enumerate(DAMAGED_FILES)])
def test_a_damaged_proposal_is_a_one_line_error(tmp_path, name, text):
    from skillos.training.textopt.sleep import stage

    folder, live, before, _ = _proposal(tmp_path)
    (folder / name).write_text(text)
    for undo in (False, True):
        with pytest.raises(SkillosError) as err:
            stage.adopt(folder, tmp_path / "home", undo=undo)
        assert "\n" not in str(err.value) and name in str(err.value)
    assert live.read_text() == before
    listed = stage.status(tmp_path / "home")
    assert listed["proposals"] and (name != "proposal.json" or listed["proposals"][0]["damaged"])


def test_damaged_reports_and_traces_are_one_line_errors_on_the_command_line(tmp_path):
    home = tmp_path / "home"
    night = home / "sleep" / "nights" / "n1"
    night.mkdir(parents=True)
    (night / "report.json").write_text('{"night": "n1", "status"')
    result = run_cli("sleep", "status", env={"SKILLOS_HOME": str(home)})
    assert result.returncode == 0 and "damaged" in result.stdout and "Traceback" not in result.stderr
    run = tmp_path / "run"
    run.mkdir()
    (run / "games.jsonl").write_text(json.dumps({"arm": "a", "game_id": "g", "success": True}) + "\n")
    (run / "trajectories.jsonl").write_text(json.dumps({"arm": "a", "phase": "eval", "game_id": "g",
                                                        "steps": [{"action": 5}]}) + "\n")
    (run / "report.json").write_text("[1, 2")
    result = run_cli("export", "inspect", run, tmp_path / "x.eval")
    assert result.returncode == 2 and "damaged trace" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    result = run_cli("eval", ROOT / "evals" / "configs" / "quickstart.yaml", "--out", run, "--resume",
                     env={"SKILLOS_HOME": str(home)})
    assert result.returncode == 2 and "Traceback" not in result.stderr
