"""What the curator's and selector's miniatures need to be earned: the curator reads a short input
(curator.history_length), the warm start's model reads its last tokens (canary.attention_window),
and may hold each taught call as one token (canary.call_tokens), the curator's GRPO may train on the
games its skills decide (canary.decisive_train), the miniature's data is in the canary's identity,
and a miniature a constant answer wins is refused before anything is recorded or trained."""

import json

import pytest

from conftest import ROOT
from skillos import config, gates
from skillos.errors import SkillosError
from skillos.evals.curation import curator_input
from skillos.evals.trajectory import Step, Trajectory

CURATOR = ROOT / "training" / "configs" / "canary-curator.yaml"


def probe(n: int = 40) -> Trajectory:
    return Trajectory("g", "heat some egg and put it in countertop", "x",
                      steps=[Step(f"go to cabinet {i}", f"You arrive at cabinet {i}.") for i in range(n)], won=False)


@pytest.mark.parametrize("length, history, shown", [(40, None, 30), (40, 5, 5), (40, 0, 0), (40, 100, 40),
                                                     (22, None, 22), (22, 30, 22), (3, 2, 2), (0, None, 0)])
def test_the_curator_reads_the_last_history_length_steps(length, history, shown):
    text = curator_input(probe(length), 1, 3, history)
    assert text.count("> go to cabinet") == shown  # a trajectory shorter than the window is shown whole
    assert text.startswith("Task 1 of 3: heat some egg") and text.endswith("Result: FAILURE")
    if shown:
        assert f"> go to cabinet {length - 1}" in text  # the last steps, not the first


@pytest.mark.parametrize("value", [0, 3, None])
def test_curator_history_length_is_traced_to_the_rollout_setup(value):
    from skillos.checking import Context
    from skillos.gates.trace import Tracer, _resolve

    cfg = config.load(CURATOR, sets=[f"curator.history_length={'null' if value is None else value}"])
    row = _resolve(Tracer(Context(cfg)), "curator.history_length", value)
    assert row.applied is True and row.arrived == (30 if value is None else value) and "CuratorEnv" in row.consumer
    eval_cfg = config.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    assert _resolve(Tracer(Context(eval_cfg)), "curator.history_length", None).consumer == "none"


def test_the_warm_start_keeps_its_attention_window(tmp_path):
    from transformers import AutoConfig

    from skillos.training.common.warmup import curator_examples, warm_up
    from skillos.evals.curation import TOOL_SURFACES

    out = warm_up("tiny-qwen2", curator_examples()[:2], TOOL_SURFACES["curate_and_advance"], tmp_path / "w",
                  steps=2, attention_window=16)
    saved = AutoConfig.from_pretrained(out)
    assert saved.sliding_window == 16 and set(saved.layer_types) == {"sliding_attention"}


def test_call_tokens_make_each_taught_operation_one_token_and_decode_to_the_same_call(tmp_path):
    from skillos.evals.backends.tool_format import training_tokenizer
    from skillos.evals.curation import TOOL_SURFACES
    from skillos.training.common.warmup import warm_up
    from skillos.training.curator import canary

    tools = TOOL_SURFACES["curate_and_advance"]
    user = [{"role": "user", "content": "Task 1 of 3: heat some egg and put it in countertop"}]
    (name, content, _, _), (other, text, _, _) = canary.PRIOR
    turns = [canary._call(name, content, 0, "A heat task."), canary._call(other, text, 1, replacing=name),
             canary._call(name, content, 2, keep=True)]
    plain = training_tokenizer(warm_up("tiny-qwen2", [user + [t] for t in turns], tools, tmp_path / "plain", steps=1))
    tokenizer = training_tokenizer(warm_up("tiny-qwen2", [user + [t] for t in turns], tools, tmp_path / "w",
                                           steps=1, call_tokens=True))
    assert len(tokenizer) > len(plain)
    for turn in turns:
        prompt = tokenizer.apply_chat_template(user, tools=tools, add_generation_prompt=True, tokenize=False)
        reply = tokenizer.apply_chat_template(user + [turn], tools=tools, tokenize=False)[len(prompt):]
        ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
        assert tokenizer.decode(ids) == reply  # the call a sampled turn writes is the text taught
        assert len(ids) < len(plain(reply, add_special_tokens=False)["input_ids"]) / 5
        for op in turn["tool_calls"][0]["function"]["arguments"]["operations"]:
            assert sum(tokenizer.decode([i]) == json.dumps(op) for i in ids) == 1  # the whole operation, one token
    said = tokenizer("A heat task.", add_special_tokens=False)["input_ids"]
    assert said == plain("A heat task.", add_special_tokens=False)["input_ids"]  # words are spelled as before


def test_with_call_tokens_the_warm_starts_reading_check_still_reads_every_said_token(tmp_path):
    """A turn whose call is a few tokens says more than it calls, so its said words weigh under 1:
    the check that the warm start learned them must still look at them (one step learns nothing)."""
    from skillos.evals.curation import TOOL_SURFACES
    from skillos.training.common.warmup import READING_FILE, warm_up
    from skillos.training.curator import canary

    user = [{"role": "user", "content": "Task 1 of 3: heat some egg and put it in countertop"}]
    (name, content, _, _), _ = canary.PRIOR
    keep = canary._call(name, content, 0, "A heat task, said at some length before a short call.", keep=True)
    out = warm_up("tiny-qwen2", [user + [keep]], TOOL_SURFACES["curate_and_advance"], tmp_path / "w", steps=1,
                  weigh_content=True, call_tokens=True)
    assert json.loads((tmp_path / "w" / READING_FILE).read_text()) == {"learned": False, "turns": 1, "steps": 1}
    assert out


def test_the_selector_canarys_slate_files_are_in_its_identity(tmp_path):
    import shutil

    from skillos.training.canary import identity
    from skillos.training.selector import canary as selector

    cfg = selector.CANARY.config()
    before = identity.config_digest(cfg)
    copy = tmp_path / "slates"
    shutil.copytree(ROOT / "training" / "configs" / "slates" / "canary", copy)
    moved = config.load(ROOT / "training" / "configs" / "canary-selector.yaml",
                        sets=[f"skillgate.slate_repo={copy}"])
    same = identity.config_digest(moved)
    skill = copy / "heat-then-place" / "SKILL.md"
    skill.write_text(skill.read_text().replace("microwave", "stove"))
    assert identity.config_digest(moved) != same  # a slate rewritten is another miniature
    assert identity.data_files(cfg)["skillgate.slate_repo"]["heat-then-place/SKILL.md"]
    assert before == identity.config_digest(selector.CANARY.config())


def test_a_miniature_a_constant_answer_wins_is_refused_before_anything_is_recorded(tmp_path, monkeypatch):
    from skillos.ledger.store import Ledger
    from skillos.training import canary
    from skillos.training.canary import payoff
    from skillos.training.curator import canary as curator

    tasks = {f"t{i}": "heat" if i % 2 else "cool" for i in range(24)}
    won = {t: True for t in tasks}
    monkeypatch.setattr(curator.CuratorCanary, "payoff", lambda self, *a, **k: payoff.table(
        {"insert both": dict(won)}, won, tasks))
    monkeypatch.setattr(curator.CuratorCanary, "measure", lambda *a, **k: pytest.fail("trained anyway"))
    ledger = Ledger(tmp_path / "ledger.db")
    with pytest.raises(SkillosError, match="can be won without reading the input: the constant answer 'insert both'"):
        canary.run("curator", out=tmp_path / "c", ledger=ledger, echo=lambda _: None)
    assert ledger.experiments() == []
    assert json.loads((tmp_path / "c" / "canary-identity.json").read_text())["code_hash"]


def test_on_a_gpu_box_the_canary_runs_on_the_devices_torch_sees(monkeypatch):
    import torch

    from skillos import devices

    monkeypatch.setattr(devices, "cuda_devices", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "NVIDIA H100 80GB HBM3")
    assert devices.seen_gpu_spec() == "H100:2"
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i=0: "Some Accelerator")
    assert devices.seen_gpu_spec() == "cuda:2"
    monkeypatch.setattr(devices, "cuda_devices", lambda: 0)
    assert devices.seen_gpu_spec() is None


@pytest.mark.slow
def test_the_curator_canary_trains_on_exactly_the_games_its_skills_decide(game_cache):
    """`decisive` keeps a train game when its type's own skill wins it and the other's loses, read
    here from the engine's own plays of each game with a repo the tool wrote (no curator env, no
    kept plays); too few such games for a group is one line naming the setting to raise."""
    from skillos.evals.arms import arm_settings
    from skillos.evals.curation import apply_op
    from skillos.evals.envs.registry import environment
    from skillos.evals.runner import play
    from skillos.repo import Retriever, SkillRepo
    from skillos.training.canary import miniature_games
    from skillos.training.curator import canary

    cfg = config.with_sets(canary.CANARY.config(quick=True), ["env.n_train_games=48", "canary.decisive_train=true"])
    train, _ = miniature_games(cfg, lambda *a: None, "curator")
    said = []
    kept = canary.decisive(cfg, train, said.append)
    env = environment(cfg)
    engine, executor, settings = env.make_env(train), env.make_executor(cfg.executor), arm_settings(cfg)

    def won(game, name, content) -> bool:
        repo = SkillRepo(None)
        assert apply_op(repo, {"op": "insert", "skill_name": name, "content": content}).ok
        return play(engine, executor, Retriever(repo, settings["retrieval_mode"]), game, settings["max_steps"],
                    settings["top_k"]).won

    own = {task_type: (name, content) for name, content, _, task_type in canary.PRIOR}
    expected = [g for g in train if won(g, *own[g.task_type])
                and not any(won(g, *skill) for t, skill in own.items() if t != g.task_type)]
    assert sorted(g.id for g in kept) == sorted(g.id for g in expected) and 0 < len(kept) < len(train)
    assert said and all(f"{t} {sum(g.task_type.split('_')[1] == t for g in kept)} of" in said[-1] for t in ("heat", "clean"))
    with pytest.raises(SkillosError, match=r"0 of its \d+ train games are won by its own skill .* raise "
                                            r"env.n_train_games") as error:
        canary.decisive(cfg, [g for g in train if g not in kept])  # none left that a skill decides
    assert "\n" not in str(error.value)


@pytest.mark.parametrize("learned, draws, kept", [([False, True, True], 3, 2), ([False, False], 2, 2), ([False], 1, 1),
                                                  ([True], 3, 1), ([False, False, False, True], 3, 3)])
def test_a_warm_start_is_drawn_again_until_its_own_turns_learned_to_say_what_they_read(tmp_path, learned, draws, kept):
    from skillos.training.canary import drawn_warm_start, identity, warm_reading
    from skillos.training.common.warmup import READING_FILE

    cfg = config.load(CURATOR, sets=[f"canary.warmup_draws={draws}", "training.seed=7"])
    seeds = []

    def build(target, seed):  # one draw: its reading check, as warm_up writes it
        seeds.append(seed)
        target.mkdir(parents=True, exist_ok=True)  # the empty folder a draw is built in
        (target / "config.json").write_text("{}")
        (target / READING_FILE).write_text(json.dumps({"learned": learned[len(seeds) - 1], "turns": 4, "steps": 1}))

    lines = []
    folder = tmp_path / "warm"
    folder.mkdir()  # an interrupted run's leftovers, no model in them
    (folder / "stale").write_text("x")
    assert drawn_warm_start(cfg, folder, build, lines.append, "canary curator") == str(folder.resolve())
    assert seeds == list(range(7, 7 + kept))  # training.seed, then the next: the first draw is the old warm start
    assert warm_reading(str(folder)) == {"learned": learned[kept - 1], "turns": 4, "steps": 1, "draw": kept, "draws": draws}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["warm"] and not (folder / "stale").exists()
    assert len(lines) == kept - 1 and all("did not learn" in line for line in lines)
    assert json.loads((folder / identity.IDENTITY).read_text())["config"] == identity.config_digest(cfg)  # stamped
    assert drawn_warm_start(cfg, folder, build, lines.append) == str(folder.resolve()) and len(seeds) == kept  # reused


def test_each_draw_of_the_curator_canarys_warm_start_trains_once_with_its_own_seed(tmp_path, game_cache, monkeypatch):
    from skillos.config.loading import with_sets
    from skillos.training.canary import miniature_games, warm_reading
    from skillos.training.common.warmup import READING_FILE
    from skillos.training.curator import canary

    cfg = with_sets(canary.CANARY.config(True), ["canary.warmup_draws=2", "training.seed=3"])
    train_games, _ = miniature_games(cfg, lambda *a: None, "curator")
    calls = []

    def fitted(model, conversations, tools, folder, **kw):  # the supervised fit, not what this test is about
        calls.append((kw["seed"], [c[-1]["tool_calls"][0]["id"] for c in conversations]))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text("{}")
        (folder / READING_FILE).write_text(json.dumps({"learned": False, "turns": len(conversations), "steps": 1}))

    monkeypatch.setattr(canary, "warm_up", fitted)
    warm = canary.warm_start(cfg, train_games, tmp_path / "warm")
    assert [seed for seed, _ in calls] == [3, 4]  # one fit a draw; the first with training.seed, as before draws
    assert calls[0][1] != calls[1][1]  # each draw's own order
    assert warm_reading(warm)["draw"] == 2 and warm_reading(warm)["draws"] == 2


@pytest.mark.parametrize("top_k, sampled", [(None, None), (0, None), (50, 50)])
def test_the_curator_canary_evaluates_with_the_top_k_it_trains_with(monkeypatch, top_k, sampled):
    """The held-out turns are sampled as training samples them where the backend can say it
    (training.top_k >= 1); TRL's whole vocabulary (None, 0) leaves generate's own default."""
    from skillos.training.curator import canary

    seen = []

    class Recorded(Exception):
        pass

    def chat(backend):
        seen.append(backend)
        raise Recorded

    monkeypatch.setattr(canary, "HFChat", chat)
    cfg = config.with_sets(config.load(ROOT / "training" / "configs" / "canary-curator.yaml"),
                           [f"training.top_k={'null' if top_k is None else top_k}"])
    with pytest.raises(Recorded):
        canary.evaluate(cfg, "model", [])
    assert seen[0].top_k == sampled and seen[0].temperature == cfg.training.temperature
    # a held-out turn gets the cap a training turn gets (a turn's, not the rollout's)
    assert seen[0].max_tokens == cfg.training.max_turn_tokens < cfg.training.max_completion_length
