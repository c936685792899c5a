"""SkillGate's SFT start (`skillgate.init`): selection turns from the gold reads or from a teacher
(a real SDK against the local scripted server), rendered on the training prompt, and (slow) the
SFT -> GRPO start on the tiny model."""

import json

import pytest

from conftest import ROOT, run_cli

from skillos import config as cfgmod
from skillos.training import selector_credit as credit

CPU = ROOT / "training" / "configs" / "selector-cpu.yaml"


@pytest.fixture(scope="module")
def built(tmp_path_factory, game_cache):
    from skillos.evals.envs.slate.slates import make_slate_setup
    from skillos.evals.arms import load_games

    cfg = cfgmod.load(CPU)
    games = load_games(cfg, "train", 3)
    return make_slate_setup(cfg, games, tmp_path_factory.mktemp("slate")), [g.id for g in games]


def test_init_needs_a_teacher_backend_for_sft():
    assert cfgmod.SkillGateConfig().init == "base"
    with pytest.raises(cfgmod.ConfigError, match="skillgate.teacher needs a model backend"):
        cfgmod.SkillGateConfig(init="sft")
    cfgmod.SkillGateConfig(init="oracle-warmup")  # the gold reads need no teacher
    with pytest.raises(cfgmod.ConfigError, match="skillgate.init: 'warm' is not one of base, sft, oracle-warmup"):
        cfgmod.SkillGateConfig(init="warm")


def test_oracle_warmup_rows_read_the_oracle_on_the_training_prompt(built):
    from skillos.evals.envs.slate.slates import SLATE_INSTRUCTIONS
    from skillos.training.selector_sft import gold_turns

    setup, ids = built
    rows = gold_turns(setup, ids)
    assert [r["game_id"] for r in rows] == ids
    for row in rows:
        slate = setup.slates[row["game_id"]]
        assert row["read"] == slate.oracle and row["role"] == "oracle"
        system, user, reply = row["messages"]
        assert user["content"].startswith(SLATE_INSTRUCTIONS) and all(f"- {n}:" in user["content"] for n in slate.order)
        assert reply["tool_calls"][0]["function"]["arguments"] == {"name": slate.oracle}


def test_a_teachers_turns_are_kept_only_when_it_reads_the_oracle(built, monkeypatch):
    """The teacher (the OpenAI SDK against the scripted server) reads the oracle on the first
    slate, a misleading skill on the second and nothing on the third: one row, in its own words,
    and two drops counted by why."""
    from llm_server import ScriptedLLM

    from skillos.config import BackendConfig
    from skillos.evals.backends.chat import make_chat
    from skillos.training.selector_sft import teacher_turns

    setup, ids = built
    slates = [setup.slates[i] for i in ids]
    picks = iter([slates[0].oracle, slates[1].misleading[0], None])

    def teacher(messages):
        pick = next(picks)
        if pick is None:
            return {"content": "I will just play.", "tool_calls": [{"name": "act", "arguments": {"command": "look"}}]}
        return {"content": f"<skill_reasoning>{pick} matches the task.</skill_reasoning>",
                "tool_calls": [{"name": "read_skill", "arguments": {"name": pick}}]}

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedLLM(teacher) as llm:
        chat = make_chat(BackendConfig(backend="openai", model="Qwen3-8B", base_url=llm.openai_url))
        rows, dropped = teacher_turns(setup, ids, chat)
        tools = [t["function"]["name"] for t in llm.calls[0]["body"]["tools"]]
    assert tools == ["act", "read_skill"]  # the schemas training and eval send
    assert [r["game_id"] for r in rows] == [ids[0]] and rows[0]["source"] == "teacher"
    assert rows[0]["messages"][-1]["content"] == f"<skill_reasoning>{slates[0].oracle} matches the task.</skill_reasoning>"
    assert dropped == {"first read misleading": 1, "no read": 1}


def test_the_start_rows_render_the_read_on_the_rollout_prompt(built):
    from transformers import AutoTokenizer

    from skillos.evals.envs.slate.slates import tool_schemas
    from skillos.training.selector_baselines import render_turn as _render
    from skillos.training.selector_sft import gold_turns
    from skillos.evals.backends.tiny_model import build

    setup, ids = built
    tokenizer = AutoTokenizer.from_pretrained(build())
    row = gold_turns(setup, ids[:1])[0]
    prompt, completion = _render(tokenizer, row["messages"], tool_schemas())
    reads = credit.locate_reads(credit.token_bytes(tokenizer, tokenizer(completion, add_special_tokens=False)["input_ids"]))
    assert [r["name"] for r in reads] == [setup.slates[ids[0]].oracle]
    assert prompt == tokenizer.apply_chat_template(row["messages"][:-1], tools=tool_schemas(),
                                                   add_generation_prompt=True, tokenize=False)


@pytest.mark.slow
def test_sft_then_grpo_on_the_tiny_model(tmp_path, game_cache):
    """init oracle-warmup: SFTTrainer on the gold reads of the 6 training slates, the merged
    model saved, then 2 selector GRPO steps from it (not from the base model)."""
    import yaml

    data = yaml.safe_load(CPU.read_text())
    data["skillgate"].update(init="oracle-warmup", sft_steps=24, sft_learning_rate=3.0e-3,
                             slate_repo=str(CPU.parent / "slates/household"))
    data["training"].update(output_dir=str(tmp_path / "out"))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    result = run_cli("train", config, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)
    init = summary["init"]
    assert init["init"] == "oracle-warmup" and init["rows"] == 6 and init["dropped"] == {}
    assert len(init["losses"]) == 24 and init["losses"][-1] < init["losses"][0]  # it learned the reads
    assert (tmp_path / "out" / "sft-start" / "config.json").is_file()
    assert "warm-up:" not in result.stderr  # the SFT start replaces the format warm-up
    assert len(summary["steps"]) == 2 and len(summary["checkpoints"]) == 2
    adapter = json.loads((tmp_path / summary["checkpoints"][-1] / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"].endswith("sft-start")  # GRPO trained on the SFT model
    rows = [json.loads(x) for x in (tmp_path / "out" / "selection.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(isinstance(r["selector_advantage"], float) for r in rows)
