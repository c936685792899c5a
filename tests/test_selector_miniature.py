"""The selector canary's miniature lets its tiny model read the task: the first input repeats the
task sentence as its last line (TaskLastSlateEnv), within the reach of a model attending to its last
canary.attention_window tokens, on every path that plays it (the warm start, GRPO, the held-out
evaluation), while the protocol's SlateEnv keeps its order."""

from pathlib import Path

import pytest

from skillos.config.loading import with_sets
from skillos.evals.envs.registry import environment
from skillos.training.selector import canary as selector
from skillos.training.selector.grpo import TASK_LINE, TaskLastSlateEnv, environment_factory, task_last

SLATE = environment("slate")


def test_task_last_repeats_the_task_line_at_the_end_and_leaves_a_text_without_one():
    text = "Skill slate:\n- a: b\n\nYou are in a room.\n\nYour task is to: put a hot cup in sinkbasin.\n\nAdmissible actions: look"
    assert task_last(text) == text + "\n\nYour task is to: put a hot cup in sinkbasin."
    assert task_last("no task here\nAdmissible actions: look") == "no task here\nAdmissible actions: look"


@pytest.fixture(scope="module")
def miniature(tmp_path_factory):
    """The canary's config and setup on 4 generated held-out games (2 heat, 2 cool)."""
    from skillos.training.canary import held_out_games

    cfg = with_sets(selector.CANARY.config(), ["env.n_games=4", "canary.split=tuning"])
    games = held_out_games(cfg, lambda _: None, "selector")
    return cfg, games, SLATE.make_slate_setup(cfg, games, tmp_path_factory.mktemp("slates"))


def test_the_miniatures_first_input_is_the_protocols_with_the_task_last_and_the_same_tools(miniature):
    cfg, games, setup = miniature
    for game in games:
        protocol = SLATE.SlateEnv(setup).reset(game_id=game.id)
        made = environment_factory(setup, TaskLastSlateEnv)()
        text = made.reset(game_id=game.id)
        assert text.startswith(protocol) and text != protocol
        assert text.splitlines()[-1].startswith(TASK_LINE) and protocol.splitlines()[-1].startswith("Admissible")
        assert made.read_skill(setup.slates[game.id].oracle).startswith(setup.slates[game.id].oracle)
    assert [n for n in dir(TaskLastSlateEnv) if not n.startswith("_")] == \
        [n for n in dir(SLATE.SlateEnv) if not n.startswith("_")]  # TRL's tools: read_skill and act


def test_the_task_word_is_within_the_reach_of_the_canarys_windowed_model(miniature):
    """The tiny model attends to its last W tokens in each of its L layers: its next token reads the
    last L(W-1)+1. The protocol's order leaves the task word beyond that on these games."""
    from transformers import AutoTokenizer

    from skillos.evals.backends.tiny_model import resolve
    from skillos.evals.backends.windowed_attention import reach
    from skillos.training.common.warmup import window_kwargs

    cfg, games, setup = miniature
    path = resolve("tiny-qwen2")  # the warm start's model, with the window it is given
    tokenizer, far = AutoTokenizer.from_pretrained(path), reach(window_kwargs(path, cfg.canary.attention_window)["config"])

    def back(text: str) -> int:  # tokens from the last task line's start to the prompt's end
        prompt = tokenizer.apply_chat_template(
            [{"role": "system", "content": SLATE.SYSTEM}, {"role": "user", "content": SLATE.SLATE_INSTRUCTIONS + "\n\n" + text}],
            tools=SLATE.tool_schemas(), tokenize=False, add_generation_prompt=True)
        return len(tokenizer(prompt[prompt.rindex(TASK_LINE):])["input_ids"])

    shown = [back(TaskLastSlateEnv(setup).reset(game_id=g.id)) for g in games]
    assert max(shown) < 40 < far
    assert max(back(SLATE.SlateEnv(setup).reset(game_id=g.id)) for g in games) > max(shown) + 60


def test_the_canarys_warm_start_gpo_and_evaluation_play_the_task_last(miniature, tmp_path, monkeypatch):
    cfg, games, _ = miniature
    taught = []
    monkeypatch.setattr(selector, "warm_up", lambda model, conversations, *a, **k: taught.extend(conversations))
    selector._warm_up(with_sets(cfg, ["canary.warmup_groups=2"]), games, tmp_path, tmp_path / "w", 0)
    assert taught and all(c[1]["content"].splitlines()[-1].startswith(TASK_LINE) for c in taught)

    class Played(Exception):
        pass

    def played(cfg, ledger, echo=print, warmup=True, signal="real", env_class=None):
        raise Played(env_class)

    monkeypatch.setattr(selector, "train", played)
    with pytest.raises(Played) as grpo:
        selector.train_and_evaluate(cfg, "warm", games, "real", tmp_path / "run", lambda _: None)
    assert grpo.value.args[0] is TaskLastSlateEnv
    sent = []
    monkeypatch.setattr(selector.HFChat, "__init__", lambda self, *a, **k: None)
    monkeypatch.setattr(selector.HFChat, "chat", lambda self, messages, tools=None: sent.append(messages) or _reply())
    outcomes, _ = selector.evaluate(cfg, "unused", games, tmp_path / "eval", lambda _: None)
    assert len(outcomes) == len(sent) == len(games)
    assert all(m[1]["content"].splitlines()[-1].startswith(TASK_LINE) for m in sent)


def _reply():
    from types import SimpleNamespace

    return SimpleNamespace(text="", tool_calls=[])


def test_interleaved_rows_take_the_task_types_in_turns_unshuffled(miniature):
    from skillos.training.selector.grpo import dataset_rows, selector_kwargs

    cfg, games, _ = miniature
    types = {g.id: g.task_type for g in games}
    ordered = with_sets(cfg, ["training.curriculum=interleaved"])
    rows = [types[r["game_id"]] for r in dataset_rows(ordered, sorted(games, key=lambda g: g.task_type))]
    assert all(a != b for a, b in zip(rows, rows[1:])) and sorted(rows) == sorted(types.values())
    assert selector_kwargs(ordered, True, Path("out"))["shuffle_dataset"] is False
    for other in ("none", "easy_first"):  # no other order means anything for one slate task a row: TRL shuffles
        shuffled = with_sets(cfg, [f"training.curriculum={other}"])
        assert [r["game_id"] for r in dataset_rows(shuffled, games)] == [g.id for g in games]
        assert "shuffle_dataset" not in selector_kwargs(shuffled, True, Path("out"))


def test_every_interleaved_step_holds_one_task_of_each_type_through_trls_sampler(miniature):
    """TRL's sampler, unshuffled, hands a step of 2 prompts x 8 completions (the canary's batch 16)
    one cool and one heat task, epoch after epoch."""
    from trl.trainer.grpo_trainer import RepeatSampler

    from skillos.training.selector.grpo import dataset_rows

    cfg, games, _ = miniature
    assert (cfg.training.per_device_train_batch_size, cfg.training.num_generations) == (16, 8)
    types = {g.id: g.task_type for g in games}
    rows = dataset_rows(with_sets(cfg, ["training.curriculum=interleaved"]), games)
    order = list(RepeatSampler(rows, mini_repeat_count=8, batch_size=2, repeat_count=1, shuffle=False))
    steps = [order[i:i + 16] for i in range(0, len(order), 16)]
    assert len(steps) == len(games) // 2
    assert all(sorted({types[rows[i]["game_id"]] for i in step}) == sorted(set(types.values())) for step in steps)


@pytest.mark.parametrize("curriculum, applied, consumer", [("interleaved", True, "dataset_rows"),
                                                           ("none", True, "shuffle_dataset"),
                                                           ("easy_first", False, "none")])
def test_the_selectors_curriculum_is_traced_to_its_rows(curriculum, applied, consumer):
    from skillos.checking import Context
    from skillos.gates.trace import Tracer, _resolve

    cfg = with_sets(selector.CANARY.config(), [f"training.curriculum={curriculum}"])
    row = _resolve(Tracer(Context(cfg)), "training.curriculum", curriculum)
    assert row.applied is applied and consumer in row.consumer, row
