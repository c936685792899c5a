"""skillos optimize end to end on generated ALFWorld games with the heuristic executor and
proposer: the A/A calibration first, every candidate gated on validation within the step's edit
budget, rejected edits remembered across epochs, the sealed test read once, the ledger history."""

import json
import sqlite3

import pytest
import yaml

from conftest import ROOT, run_cli

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
pytestmark = pytest.mark.alfworld

SHIPPED = ROOT / "training" / "configs" / "optimize-quickstart.yaml"


def small_config(tmp_path, **optimize):
    data = yaml.safe_load(SHIPPED.read_text())
    data["env"].update(n_games=8, n_train_games=6)
    data["experiment"]["expected_effect"] = None  # a smoke run at 8 tasks claims no gain (gate 5 WARNs)
    data["optimize"].update(epochs=2, minibatch_size=3, n_validation=8, **optimize)
    path = tmp_path / "optimize.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.slow  # ~70 s of real ALFWorld games: CI runs it in the slow step
def test_optimize_runs_the_gated_loop_and_reports_on_the_sealed_test(tmp_path, game_cache, skillos_home):
    from skillos.training.textopt.optimize import edits_allowed

    out = tmp_path / "run"
    result = run_cli("optimize", small_config(tmp_path), "--out", out, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert "A/A calibration: the paired gate judged the seed against a copy of itself: reject" in result.stderr
    history = [json.loads(line) for line in (out / "history.jsonl").read_text().splitlines()]
    assert report["candidates_tried"] == len(history) >= 1
    total = 2 * 2  # epochs x ceil(6 train games / minibatch 3)
    for h in history:  # the textual learning rate bounds every candidate's changed lines
        step = h["epoch"] * 2 + h["step"]
        budget = h["budget"]
        assert budget["allowed"] == edits_allowed(step, total, 40, 20, "cosine") and budget["unit"] == "changed lines"
        assert 1 <= len(h["edits"]) and 0 < budget["used"] <= budget["allowed"]
        assert h["reflections"] >= 1 and h["gradient"].startswith("Textual gradient from")
        assert h["verdict"] in ("accept", "reject", "indecisive") and h["n_tasks"] == 8 and h["diff"].startswith("---")
    # the sealed test: read once, at the end; seed and best on the same 8 games, denominators shown
    assert (out / "test.sealed").read_text().startswith(f"final report after {len(history)} candidates")
    assert report["seed"]["attempted"] == report["best"]["attempted"] == 8
    assert f"{len(history)} " in report["verdict"] or "corrected for" in report["verdict"]
    assert (out / "best_skill").is_dir() and len(list((out / "best_skill").glob("*/SKILL.md"))) == report["best_skills"]
    # rejected candidates: kept across epochs, and never proposed again
    rejected = json.loads((out / "rejected.json").read_text()) if (out / "rejected.json").exists() else []
    assert len(rejected) == sum(h["verdict"] != "accept" for h in history)
    keys = [k for r in rejected for k in r["keys"]]
    assert len(keys) == len(set(keys))
    db = sqlite3.connect(skillos_home / "ledger.db")
    rows = db.execute("SELECT verdict, mode, n_tasks FROM candidates ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [h["verdict"] for h in history] and {r[1] for r in rows} == {"paired"}
    assert [r[0] for r in db.execute("SELECT arm FROM evals ORDER BY id")] == ["seed", "best"]
    again = run_cli("optimize", small_config(tmp_path), "--out", out)
    assert again.returncode == 2 and "output folder exists and is not empty" in again.stderr


def test_optimize_refuses_overlapping_splits_and_a_bad_seed_folder(tmp_path, game_cache):
    bad = small_config(tmp_path, validation_split="valid_unseen")  # the same as the sealed test split
    result = run_cli("optimize", bad, "--out", tmp_path / "a")
    assert result.returncode == 2 and "optimize needs three different splits" in result.stderr
    missing = small_config(tmp_path, seed_skills="no-such-folder")
    result = run_cli("optimize", missing, "--out", tmp_path / "b")
    assert result.returncode == 2 and "optimize.seed_skills:" in result.stderr and "Traceback" not in result.stderr
    assert "gates (optimize)" not in result.stderr  # refused before the gates played a game
