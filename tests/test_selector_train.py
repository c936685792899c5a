"""SkillGate end to end on a CPU (slow, run in CI): `skillos train` on the selector CPU config
runs 2 GRPO steps with clean-oracle selector credit through the gates, every rollout's reads
are logged with their token spans, the checkpoint loads as an executor (backend hf), and
`skillos slate eval` reports its selection metrics with denominators against the control."""

import json

import pytest

from conftest import ROOT, run_cli

CPU = ROOT / "training" / "configs" / "selector-cpu.yaml"


@pytest.mark.slow
def test_two_selector_steps_then_an_eval_of_the_checkpoint(tmp_path, game_cache, skillos_home):
    result = run_cli("train", CPU, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)
    assert len(summary["steps"]) == 2 and len(summary["checkpoints"]) == 2
    checkpoint = tmp_path / summary["checkpoints"][-1]
    # the smoke run moves its weights (TRL's own trainer_state), through its selection-credit stream
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    assert any((h.get("grad_norm") or 0) > 0 for h in state["log_history"]), state["log_history"]
    assert summary["signal"]["grad_nonzero"] >= 1 and "selection/advantage_nonzero" in result.stderr
    surface = json.loads((checkpoint / "skillos-curator.json").read_text())
    assert surface["tools"] == "read_skill,act"
    for step in summary["steps"]:
        assert step["episodes"] == 2 and step["measured"] + step["unmeasured"] == 2
    rollouts = [json.loads(line) for line in (tmp_path / summary["output_dir"] / "selection.jsonl").read_text().splitlines()]
    assert len(rollouts) == 4
    for r in rollouts:
        assert isinstance(r["selector_advantage"], float) and isinstance(r["outcome_advantage"], float)
        assert len(r["read_spans"]) >= len(r["reads"])  # every executed read was written in the stream
        for span in r["read_spans"]:
            assert 0 <= span["token_start"] < span["token_end"]
        assert r["utility"] == (1.0 if r["reads"] == [r["oracle"]] else 0.0)
    manifest = json.loads((tmp_path / summary["slate"] / "manifest.json").read_text())
    assert len(manifest["slates"]) == 6 and manifest["snapshot_hash"]

    out = tmp_path / "eval"
    result = run_cli("slate", "eval", CPU, "--out", out, "--checkpoint", f"trained={checkpoint}", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    trained = report["arms"]["trained"]["selection"]
    assert trained["episodes"] == 3 and trained["measured"] + trained["unmeasured"] == 3
    for key in ("success", "oracle_read", "misleading_read", "no_read", "reads_per_episode"):
        assert trained[key]["of"] == trained["measured"], key
    assert trained["selection_token_share"]["of"] > 0  # the model's tokens were counted
    assert report["arms"]["executor"]["selection"]["selection_token_share"]["value"] is None  # no model, no tokens
    assert {c["metric"] for c in report["comparisons"]} == {"success", "oracle_read"}
    assert all(c["n_paired"] + c["n_dropped"] == 3 for c in report["comparisons"])
    assert report["pins"]["snapshot_hash"] and report["arms"]["trained"]["pass"][0]["k"] == 1
