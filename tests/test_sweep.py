"""`skillos sweep`: repos on a required target executor, a fresh control in the same run, the
family-corrected table, the best repo with its selection caveat, lift vs step as a PNG."""

import json

import pytest
import yaml

from conftest import ROOT, run_cli

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
pytestmark = pytest.mark.alfworld


def skill_repo(folder, body):
    (folder / "where-to-find-mug").mkdir(parents=True)
    (folder / "where-to-find-mug" / "SKILL.md").write_text(
        f"---\nname: where-to-find-mug\ndescription: Where mugs were found.\n---\n{body}\n")
    return folder


def test_sweep_reports_every_repo_against_a_fresh_control(tmp_path, game_cache):
    data = yaml.safe_load((ROOT / "evals" / "configs" / "quickstart.yaml").read_text())
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(data))
    early = skill_repo(tmp_path / "checkpoint-10", "")
    late = skill_repo(tmp_path / "checkpoint-20", "")
    out = tmp_path / "sweep"
    result = run_cli("sweep", config, "--repo", late, "--repo", early, "--executor", "heuristic",
                     "--n-games", 4, "--n-train-games", 4, "--json", "--out", out)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert set(report["arms"]) == {"no_memory", "repo:checkpoint-10", "repo:checkpoint-20"}
    assert all(a["attempted"] == 4 for a in report["arms"].values())
    summary = report["sweep"]
    assert [r["step"] for r in summary["rows"]] == [10, 20]
    assert all("p_adjusted" in r and "mde" in r for r in summary["rows"])
    assert "optimistic (best of 2)" in summary["caveat"] and summary["best"] in ("checkpoint-10", "checkpoint-20")
    assert (out / "sweep.png").stat().st_size > 1000 and json.loads((out / "sweep.json").read_text())


@pytest.mark.parametrize("args, message", [
    (["--executor", "gpt"], "expected heuristic or one of openai:MODEL, anthropic:MODEL"),
    ([], "Missing option '--executor'"),
])
def test_sweep_needs_a_target_executor(tmp_path, args, message):
    repo = skill_repo(tmp_path / "r", "")
    result = run_cli("sweep", ROOT / "evals" / "configs" / "quickstart.yaml", "--repo", repo, *args)
    assert result.returncode == 2 and message in result.stderr


def test_sweep_evaluates_curator_checkpoints_on_their_trained_surface(tmp_path, game_cache, tiny_curator):
    """A checkpoint arm curates its own repo from empty with the checkpoint as an hf curator,
    on the tool surface its marker names; the control plays in the same run."""
    import shutil

    checkpoint = tmp_path / "checkpoint-5"
    shutil.copytree(tiny_curator, checkpoint)
    (checkpoint / "skillos-curator.json").write_text(json.dumps({"tools": "curate_and_advance", "step": 5}))
    out = tmp_path / "sweep"
    result = run_cli("sweep", ROOT / "evals" / "configs" / "quickstart.yaml", "--checkpoint", checkpoint,
                     "--executor", "heuristic", "--n-games", 3, "--n-train-games", 0, "--json", "--out", out)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert set(report["arms"]) == {"no_memory", "curator:checkpoint-5"}
    assert [r["step"] for r in report["sweep"]["rows"]] == [5]
    progress = json.loads((out / "repo-curator:checkpoint-5" / ".progress.json").read_text())
    assert progress == {"curated": 3, "state": "idle"}  # the checkpoint curated after every game
    recorded = yaml.safe_load((out / "config.yaml").read_text())
    assert recorded["curator"]["tools"] == "curate_and_advance"
    assert recorded["eval"]["curators"] == {"checkpoint-5": str(checkpoint)}
