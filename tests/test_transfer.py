"""Cross-domain transfer in `skillos sweep --env`: curators (or repos) evaluated on another
environment, each target with its own control in the same sweep, one Holm family over every
direction."""

import json
import shutil

import pytest

from conftest import ROOT, run_cli

HOUSEHOLD = ROOT / "evals" / "configs" / "quickstart.yaml"


def skill_repo(folder):
    (folder / "check-your-work").mkdir(parents=True)
    (folder / "check-your-work" / "SKILL.md").write_text(
        "---\nname: check-your-work\ndescription: Substitute the answer back before you box it.\n---\nCheck it.\n")
    return folder


def test_a_sweep_in_both_directions_corrects_one_family_with_a_control_per_target(tmp_path, game_cache):
    pytest.importorskip("alfworld", reason="the household direction needs the [alfworld] extra")
    out = tmp_path / "sweep"
    result = run_cli("sweep", HOUSEHOLD, "--repo", skill_repo(tmp_path / "checkpoint-3"), "--executor", "heuristic",
                     "--env", "household", "--env", "reasoning", "--n-games", 4, "--n-train-games", 0,
                     "--json", "--out", out)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    family = report["transfer"]
    assert family["targets"] == ["household", "reasoning"] and family["correction"] == "holm"
    assert {r["target_env"] for r in family["rows"]} == {"household", "reasoning"}
    assert family["family_size"] == len(family["rows"]) == 2  # unmeasured rows count, at p = 1
    for target in ("household", "reasoning"):
        run = json.loads((out / target / "report.json").read_text())
        assert run["env"]["name"] == target and set(run["arms"]) == {"no_memory", "repo:checkpoint-3"}
        assert all(a["attempted"] == 4 for a in run["arms"].values())  # its own control, same games
    reasoning = json.loads((out / "reasoning" / "report.json").read_text())
    assert reasoning["env"]["max_steps"] == 1  # retargeted: one turn per problem
    assert json.loads((out / "transfer.json").read_text()) == family


@pytest.mark.slow
def test_a_household_trained_checkpoint_on_the_reasoning_set_reports_the_family_corrected_table(
        tmp_path, game_cache, tiny_curator):
    checkpoint = tmp_path / "checkpoint-5"
    shutil.copytree(tiny_curator, checkpoint)
    (checkpoint / "skillos-curator.json").write_text(
        json.dumps({"tools": "curate_and_advance", "step": 5, "env": "household"}))
    out = tmp_path / "sweep"
    result = run_cli("sweep", HOUSEHOLD, "--checkpoint", checkpoint, "--executor", "heuristic", "--env", "reasoning",
                     "--n-games", 4, "--n-train-games", 0, "--json", "--out", out)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    assert report["env"]["name"] == "reasoning" and set(report["arms"]) == {"no_memory", "curator:checkpoint-5"}
    assert all(a["attempted"] == 4 for a in report["arms"].values())
    row, = report["sweep"]["rows"]
    assert (row["source_env"], row["target_env"], row["transfer"]) == ("household", "reasoning", True)
    assert row["n_paired"] + row["n_dropped"] == 4
    family = report["sweep"]["family"]
    assert family["correction"] == "holm" and family["targets"] == ["reasoning"]
    assert "p_family" in family["rows"][0] and "mde" in family["rows"][0]
    progress = json.loads((out / "repo-curator:checkpoint-5" / ".progress.json").read_text())
    assert progress == {"curated": 4, "state": "idle"}  # the household curator curated every problem
