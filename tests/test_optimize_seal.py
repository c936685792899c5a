"""skillos optimize's test split is sealed in the ledger (experiment name + split content hash),
so no second process or output folder reads it without a recorded override; a killed run
resumes with its rejected memory; the smallest acceptable gain is printed before any candidate."""

import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from skillos.errors import SkillosError
from skillos.ledger import Ledger

READ = """
import sys
from dataclasses import dataclass
from skillos.errors import SkillosError
from skillos.ledger import Ledger
from skillos.training.textopt.optimize import SealedSplit

@dataclass
class Game:
    content_hash: str

games = [Game(h) for h in sys.argv[3].split(",")]
with Ledger(sys.argv[1]) as ledger:
    override = sys.argv[4] if len(sys.argv) > 4 else None
    SealedSplit(games, sys.argv[2] + "/test.sealed", ledger, "optimize-quickstart", override).read("final report")
print("read")
"""


def read_in_a_new_process(ledger, out, hashes, *override):
    return subprocess.run([sys.executable, "-c", READ, str(ledger), str(out), hashes, *override],
                          capture_output=True, text=True, timeout=120)


def test_the_sealed_split_is_read_once_across_processes_and_folders(tmp_path):
    ledger = tmp_path / "ledger.db"
    first = read_in_a_new_process(ledger, tmp_path / "run-1", "a,b,c")
    assert first.returncode == 0 and first.stdout.strip() == "read", first.stderr
    again = read_in_a_new_process(ledger, tmp_path / "run-2", "c,b,a")  # same games, new folder
    assert again.returncode != 0 and "was already read 1 time(s)" in again.stderr
    assert str(tmp_path / "run-1") in again.stderr and not (tmp_path / "run-2" / "test.sealed").exists()
    other = read_in_a_new_process(ledger, tmp_path / "run-3", "d,e")  # another split: its own seal
    assert other.returncode == 0, other.stderr
    reason = "a person re-reads it to debug the report; not for claims"
    forced = read_in_a_new_process(ledger, tmp_path / "run-4", "a,b,c", reason)
    assert forced.returncode == 0, forced.stderr
    with Ledger(ledger) as book:
        seals = book.rows("seals")
        assert [s["override"] for s in seals] == [None, None, reason]
        (override,) = book.rows("overrides")
        assert override["check_name"] == "sealed-split" and reason in override["reason"]


SHIPPED = ROOT / "training" / "configs" / "optimize-quickstart.yaml"


def tiny_config(tmp_path):
    data = yaml.safe_load(SHIPPED.read_text())
    data["env"].update(n_games=4, n_train_games=4)
    data["experiment"]["expected_effect"] = None
    data["optimize"].update(epochs=1, minibatch_size=2, n_validation=4)
    path = tmp_path / "optimize.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.alfworld
@pytest.mark.slow  # ~1 minute of real ALFWorld games on 2 cores: CI runs it in the slow step
def test_a_killed_optimize_run_resumes_with_its_rejected_memory(tmp_path, game_cache, skillos_home, monkeypatch):
    pytest.importorskip("alfworld")
    import skillos
    from skillos.training.textopt import optimize

    cfg, out, lines = skillos.load(tiny_config(tmp_path)), tmp_path / "run", []
    real_apply, calls = optimize.apply_edits, []

    def killed_at_the_second_candidate(repo, edits):
        calls.append(edits)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies mid-step
        return real_apply(repo, edits)

    monkeypatch.setattr(optimize, "apply_edits", killed_at_the_second_candidate)
    with pytest.raises(KeyboardInterrupt):
        skillos.optimize(cfg, out=out, echo=lines.append)
    plan = next(i for i, line in enumerate(lines) if line.startswith("smallest acceptable gain"))
    assert plan < min([i for i, line in enumerate(lines) if line.startswith("epoch ")] or [len(lines)])
    assert "of n_validation = 4 tasks" in lines[plan]
    state = optimize.json.loads((out / "state.json").read_text())
    assert state["next"] == 1 and not (out / "test.sealed").exists()
    memory_before = optimize.RejectedMemory(out / "rejected.json").items
    monkeypatch.setattr(optimize, "apply_edits", real_apply)
    with pytest.raises(SkillosError, match="output folder exists"):
        skillos.optimize(cfg, out=out)
    resumed = []
    report = skillos.optimize(cfg, out=out, resume=True, echo=resumed.append)
    assert any(line.startswith(f"resuming {out} at step 1 of 2") for line in resumed), resumed
    assert report["candidates_tried"] >= state["tried"] and (out / "report.json").exists()
    memory_after = optimize.RejectedMemory(out / "rejected.json").items
    assert memory_after[:len(memory_before)] == memory_before  # what was rejected before the kill is kept
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert len(ledger.rows("seals")) == 1
    with pytest.raises(SkillosError, match="nothing to resume"):
        skillos.optimize(cfg, out=out, resume=True)


@pytest.mark.alfworld
@pytest.mark.slow  # ~1 minute of real ALFWorld games on 2 cores: CI runs it in the slow step
def test_a_test_read_cut_off_by_a_disk_fault_is_completed_for_the_same_best_as_the_same_look(
        tmp_path, game_cache, skillos_home, monkeypatch):
    pytest.importorskip("alfworld")
    import errno
    import json

    import skillos
    from skillos.training.textopt import optimize

    cfg, out = skillos.load(tiny_config(tmp_path)), tmp_path / "run"
    real_play, played = optimize._Player.play, []

    def disk_full_in_the_best_arms_third_test_game(self, repo, games, label, curator=None, on_game=None):
        def each(row):
            played.append((label, row["game_id"]))
            if on_game is not None:
                on_game(row)
            if label == "best" and sum(arm == "best" for arm, _ in played) == 3:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_play(self, repo, games, label, curator, on_game=each)

    monkeypatch.setattr(optimize._Player, "play", disk_full_in_the_best_arms_third_test_game)
    with pytest.raises(OSError, match="No space left"):
        skillos.optimize(cfg, out=out)
    assert (out / "test.sealed").exists() and not (out / "report.json").exists()
    kept = [json.loads(line) for line in (out / optimize.TEST_GAMES).read_text().splitlines()]
    assert [e["arm"] for e in kept] == ["seed"] * 4 + ["best"] * 3

    monkeypatch.setattr(optimize._Player, "play", real_play)
    recorded = (out / optimize.TEST_READ).read_text()
    other = json.loads(recorded) | {"best": "0" * 64}  # a best chosen after the look: refused
    (out / optimize.TEST_READ).write_text(json.dumps(other))
    with pytest.raises(SkillosError, match="read for another seed or best"):
        skillos.optimize(cfg, out=out, resume=True)
    (out / optimize.TEST_READ).write_text(recorded)

    played.clear()
    monkeypatch.setattr(optimize._Player, "play", lambda self, repo, games, label, curator=None, on_game=None: (
        played.extend((label, g.id) for g in games), real_play(self, repo, games, label, curator, on_game))[1])
    report = skillos.optimize(cfg, out=out, resume=True)
    test_ids = {e["row"]["game_id"] for e in kept}
    replayed = [(arm, g) for arm, g in played if g in test_ids]
    assert [arm for arm, _ in replayed] == ["best"]  # only the game no arm finished; none kept is re-rolled
    assert report["scored_on"]["played_after_a_fault"] == {"seed": 0, "best": 1}
    assert report["test_outcomes"]["seed"] == {e["row"]["game_id"]: e["row"]["success"] for e in kept[:4]}
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert len(ledger.rows("seals")) == 1  # the same look
        (run,) = ledger.rows("runs")
        assert run["status"] == "finished"
    with pytest.raises(SkillosError, match="nothing to resume"):
        skillos.optimize(cfg, out=out, resume=True)
