"""SkillGate's SFT start (`skillgate.init`): selection turns from the gold reads or from a teacher
(a real SDK against the local scripted server), rendered on the training prompt, and (slow) the
SFT -> GRPO start on the tiny model."""

import json

import pytest

from conftest import ROOT, run_cli

from skillos import config as cfgmod
from skillos.errors import SkillosError
from skillos.training.selector import credit as credit

CPU = ROOT / "training" / "configs" / "selector-cpu.yaml"


@pytest.fixture(scope="module")
def built(tmp_path_factory, game_cache):
    from skillos.evals.envs.slate.slates import make_slate_setup
    from skillos.evals.arms import load_games

    cfg = cfgmod.load(CPU)
    games = load_games(cfg, "train", 3)
    return make_slate_setup(cfg, games, tmp_path_factory.mktemp("slate")), [g.id for g in games]


def test_init_needs_a_teacher_backend_for_sft():
    def skillgate(**keys):
        return cfgmod.from_dict({"skillgate": keys}).skillgate

    assert skillgate().init == "base"
    with pytest.raises(cfgmod.ConfigError, match="skillgate.teacher needs a model backend"):
        skillgate(init="sft")
    skillgate(init="gold-bc")  # the gold reads need no teacher
    skillgate(init="oracle-grpo")  # nor does GRPO with the oracle shown
    with pytest.raises(cfgmod.ConfigError, match="skillgate.init: 'warm' is not one of base, sft, gold-bc, oracle-grpo"):
        skillgate(init="warm")
    with pytest.raises(cfgmod.ConfigError, match="skillgate.oracle_grpo_steps: must be between 1 and"):
        skillgate(init="oracle-grpo", oracle_grpo_steps=0)
    # the old name meant SFT on the gold reads: refused with what each recipe is called now
    with pytest.raises(cfgmod.ConfigError, match="oracle-warmup was SFT on the gold reads, now gold-bc.*oracle-grpo"):
        skillgate(init="oracle-warmup")


def test_the_oracle_grpo_start_exports_mid_training_and_shows_the_oracle_alone(built):
    """The method's start: half of training.max_steps unless oracle_grpo_steps says otherwise,
    on slates that show the oracle and nothing else."""
    import dataclasses

    from skillos.evals.envs.slate.slates import SlateEnv
    from skillos.training.selector.sft import warmup_steps

    cfg = cfgmod.load(ROOT / "training" / "configs" / "selector-gpu-clean-oracle.yaml")
    assert cfg.skillgate.init == "oracle-grpo" and warmup_steps(cfg) == cfg.training.max_steps // 2
    assert warmup_steps(cfgmod.with_sets(cfg, ["skillgate.oracle_grpo_steps=7"])) == 7
    setup, ids = built
    env = SlateEnv(dataclasses.replace(setup, oracle_only=True))
    first = env.reset(game_id=ids[0])
    oracle = setup.slates[ids[0]].oracle
    listed = [line for line in first.splitlines() if line.startswith("- ")]
    assert listed == [f"- {oracle}: {setup.slates[ids[0]].skill(setup.repo, oracle).description}"]
    assert env.read_skill(setup.slates[ids[0]].misleading[0]).startswith("error:")  # not on this slate
    assert "error" not in env.read_skill(oracle)


def test_gold_bc_rows_read_the_oracle_on_the_training_prompt(built):
    from skillos.evals.envs.slate.slates import SLATE_INSTRUCTIONS
    from skillos.training.selector.sft import gold_turns

    setup, ids = built
    rows = gold_turns(setup, ids)
    assert [r["game_id"] for r in rows] == ids
    for row in rows:
        slate = setup.slates[row["game_id"]]
        assert row["read"] == slate.oracle and row["role"] == "oracle"
        system, user, reply = row["messages"]
        assert user["content"].startswith(SLATE_INSTRUCTIONS) and all(f"- {n}:" in user["content"] for n in slate.order)
        assert reply["tool_calls"][0]["function"]["arguments"] == {"name": slate.oracle}


def _teacher(setup, picks):
    """A scripted teacher: on each game's first call it reads `picks[game]` (None: it acts
    instead), then plays as the CPU executor would with that one skill read, from the
    observation and admissible actions in the last message."""
    from skillos.evals.envs.household.heuristic import HeuristicExecutor

    episodes = {}

    def policy(messages):
        opening = messages[1]["content"]
        gid = next(g for g in picks if setup.games[g].task in opening)
        last = messages[-1]["content"]
        if len(messages) == 2:
            if picks[gid] is not None:
                return {"content": f"<skill_reasoning>{picks[gid]} matches the task.</skill_reasoning>",
                        "tool_calls": [{"name": "read_skill", "arguments": {"name": picks[gid]}}]}
            last = opening
        if gid not in episodes:
            read = [setup.slates[gid].skill(setup.repo, picks[gid])] if picks[gid] else []
            episodes[gid] = HeuristicExecutor().new_episode(setup.games[gid].task, read)
        if messages[-1]["role"] == "tool" and messages[-1].get("name") == "read_skill":
            last = opening  # the read's answer: the scene is still the opening's
        scene, _, actions = last.rpartition("Admissible actions: ")
        scene = scene.split("\n- ")[-1].split("\n", 1)[-1] if last is opening else scene
        command = episodes[gid].act(scene, actions.strip().split(", "))
        return {"content": "", "tool_calls": [{"name": "act", "arguments": {"command": command}}]}

    return policy


def test_a_teachers_whole_trajectories_are_kept_only_when_it_reads_the_oracle_and_wins(built, monkeypatch):
    """The teacher (the OpenAI SDK against the scripted server, played as the slate executor)
    reads the oracle on the first game and wins it, a misleading skill on the second, and
    nothing on the third: every assistant turn of the first trajectory is a row (its read, then
    its actions, each conditioned on all before it), and two trajectories are dropped by why."""
    from llm_server import ScriptedLLM

    from skillos.config import BackendConfig
    from skillos.evals.envs.registry import environment
    from skillos.training.selector.sft import teacher_trajectories

    setup, ids = built
    slates = [setup.slates[i] for i in ids]
    picks = {ids[0]: slates[0].oracle, ids[1]: slates[1].misleading[0], ids[2]: None}
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedLLM(_teacher(setup, picks)) as llm:
        teacher = environment("slate").make_executor(BackendConfig(backend="openai", model="Qwen3-8B",
                                                                   base_url=llm.openai_url))
        rows, dropped = teacher_trajectories(setup, ids, teacher, max_steps=40)
        tools = [t["function"]["name"] for t in llm.calls[0]["body"]["tools"]]
    assert tools == ["act", "read_skill"]  # the schemas training and eval send
    assert dropped == {"first read misleading": 1, "no read": 1}
    assert {r["game_id"] for r in rows} == {ids[0]} and all(r["source"] == "teacher" for r in rows)
    assert len(rows) >= 3  # the read and at least two actions: the whole trajectory, not its first turn
    first, *acts = rows
    assert first["messages"][-1]["content"] == f"<skill_reasoning>{slates[0].oracle} matches the task.</skill_reasoning>"
    assert all(r["messages"][-1]["tool_calls"][0]["function"]["name"] == "act" for r in acts)
    assert all(len(b["messages"]) > len(a["messages"]) for a, b in zip(rows, rows[1:]))  # each on all before it
    assert rows[-1]["messages"][:len(first["messages"])] == first["messages"]
    from transformers import AutoTokenizer

    from skillos.evals.backends.tiny_model import build
    from skillos.evals.envs.slate.slates import tool_schemas
    from skillos.training.selector.rows import render_turn

    tokenizer = AutoTokenizer.from_pretrained(build())
    for row in rows:  # every turn renders as a prompt (the history, tool results included) and its completion
        prompt, completion = render_turn(tokenizer, row["messages"], tool_schemas())
        assert "<tool_call>" in completion and prompt.count("<tool_response>") == sum(
            m["role"] == "tool" for m in row["messages"])
    # the same teacher, reading the oracle and then only looking around, loses: dropped by why
    looks = {ids[0]: slates[0].oracle}

    def idle(messages):
        if len(messages) == 2:
            return {"content": "", "tool_calls": [{"name": "read_skill", "arguments": {"name": looks[ids[0]]}}]}
        return {"content": "", "tool_calls": [{"name": "act", "arguments": {"command": "look"}}]}

    with ScriptedLLM(idle) as llm:
        teacher = environment("slate").make_executor(BackendConfig(backend="openai", model="Qwen3-8B",
                                                                   base_url=llm.openai_url))
        assert teacher_trajectories(setup, ids[:1], teacher, max_steps=3) == ([], {"lost after reading the oracle": 1})


def test_the_start_rows_render_the_read_on_the_rollout_prompt(built):
    from transformers import AutoTokenizer

    from skillos.evals.envs.slate.slates import tool_schemas
    from skillos.training.selector.rows import render_turn as _render
    from skillos.training.selector.sft import gold_turns
    from skillos.evals.backends.tiny_model import build

    setup, ids = built
    tokenizer = AutoTokenizer.from_pretrained(build())
    row = gold_turns(setup, ids[:1])[0]
    prompt, completion = _render(tokenizer, row["messages"], tool_schemas())
    reads = credit.locate_reads(credit.token_bytes(tokenizer, tokenizer(completion, add_special_tokens=False)["input_ids"]))
    assert [r["name"] for r in reads] == [setup.slates[ids[0]].oracle]
    assert prompt == tokenizer.apply_chat_template(row["messages"][:-1], tools=tool_schemas(),
                                                   add_generation_prompt=True, tokenize=False)


def test_a_gold_bc_start_learns_the_gold_reads_on_the_tiny_model(built, tmp_path):
    """init gold-bc: SFTTrainer on the gold reads of the training slates; the merged model and its
    summary are saved, and a second call reuses them."""
    from skillos.evals.backends.tiny_model import TINY_NAME, resolve
    from skillos.training.selector.sft import start

    setup, ids = built
    cfg = cfgmod.with_sets(cfgmod.load(CPU), ["skillgate.init=gold-bc", "skillgate.sft_steps=12",
                                              "skillgate.sft_learning_rate=3.0e-3"])
    assert cfg.training.model == TINY_NAME
    lines = []
    model, init = start(cfg, setup, ids, resolve(cfg.training.model), tmp_path, lines.append, cpu=True)
    assert init["init"] == "gold-bc" and init["rows"] == len(ids) and init["dropped"] == {}
    assert len(init["losses"]) == 12 and init["losses"][-1] < init["losses"][0]  # it learned the reads
    assert (tmp_path / "sft-start" / "config.json").is_file() and model.endswith("sft-start")
    again, same = start(cfg, setup, ids, "unused", tmp_path, lines.append, cpu=True)
    assert (again, same) == (model, init) and lines[-1].startswith("init gold-bc: reusing")
    other = cfgmod.with_sets(cfg, ["skillgate.init=oracle-grpo"])  # another recipe never reuses this start
    with pytest.raises(SkillosError, match="a 'gold-bc' start, not the 'oracle-grpo'"):
        start(other, setup, ids, "unused", tmp_path, lines.append, cpu=True)


@pytest.mark.slow
def test_oracle_grpo_then_grpo_on_the_tiny_model(tmp_path, game_cache):
    """init oracle-grpo, the method's start: the format warm-up, 2 outcome GRPO steps with the
    oracle as the only skill on every rollout's slate, the merged model saved, then 2 selector GRPO
    steps from it (not from the base model) on the full slates."""
    import yaml

    data = yaml.safe_load(CPU.read_text())
    data["skillgate"].update(init="oracle-grpo", oracle_grpo_steps=2,
                             slate_repo=str(CPU.parent / "slates/household"))
    data["training"].update(output_dir=str(tmp_path / "out"))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    result = run_cli("train", config, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)
    init = summary["init"]
    assert init["init"] == "oracle-grpo" and init["steps"] == init["exported_at"] == 2
    assert [r["of"] for r in init["rollouts"]] == [2, 2]  # two measured rollouts a step, success counted
    assert (tmp_path / "out" / "sft-start" / "config.json").is_file()
    warm = [json.loads(x) for x in (tmp_path / "out" / "oracle-grpo" / "selection.jsonl").read_text().splitlines()]
    assert len(warm) == 4 and all(r["slate"] == [r["oracle"]] for r in warm)  # the oracle alone, every rollout
    assert len(summary["steps"]) == 2 and len(summary["checkpoints"]) == 2
    adapter = json.loads((tmp_path / summary["checkpoints"][-1] / "adapter_config.json").read_text())
    assert adapter["base_model_name_or_path"].endswith("sft-start")  # GRPO trained on the SFT model
    rows = [json.loads(x) for x in (tmp_path / "out" / "selection.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(isinstance(r["selector_advantage"], float) for r in rows)
