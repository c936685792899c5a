"""Every SkillGate profile runs on a CPU (slow): 2 selector GRPO steps of the tiny model on the CPU
config's 8-skill slates (all four categories), from one shared format warm-up, with what each
profile does to the rollouts and the selector advantage read back from selection.jsonl."""

import json

import pytest

from conftest import ROOT

from skillos import config as cfgmod
from skillos.config import SELECTOR_CREDITS

CPU = ROOT / "training" / "configs" / "selector-cpu.yaml"


@pytest.fixture(scope="module")
def warm(tmp_path_factory, game_cache):
    """The tiny model after a short format warm-up (the trainer's, 60 steps) on the CPU config's
    training slates: a start that writes read_skill calls, shared by every profile."""
    from skillos.evals.backends.tiny_model import resolve
    from skillos.evals.envs.slate.slates import make_slate_setup, tool_schemas
    from skillos.evals.arms import load_games
    from skillos.training.selector.grpo import dataset_rows, warmup_conversations
    from skillos.training.common.warmup import warm_up

    cfg = cfgmod.load(CPU)
    out = tmp_path_factory.mktemp("warm")
    games = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games)
    conversations = warmup_conversations(make_slate_setup(cfg, games, out), dataset_rows(cfg, games)[:6])
    return warm_up(resolve(cfg.training.model), conversations, tool_schemas(), out / "warm", steps=60)


@pytest.mark.slow
@pytest.mark.parametrize("profile", SELECTOR_CREDITS)
def test_each_profile_trains_two_steps_on_cpu(profile, warm, tmp_path):
    from skillos.training.selector.trainer import train

    coef = 0.0 if profile == "task-mask-only" else 1.0
    cfg = cfgmod.with_sets(cfgmod.load(CPU), [
        f"skillgate.selector_credit={profile}", f"skillgate.selector_coef={coef}", f"training.model={warm}",
        f"training.output_dir={tmp_path / 'out'}", f"skillgate.slate_repo={CPU.parent / 'slates/household'}"])
    summary = train(cfg, None, echo=lambda *_: None, warmup=False)
    assert len(summary["steps"]) == 2 and len(summary["checkpoints"]) == 2, profile
    assert summary["profile"] == profile and summary["slates"]["per_slate"] == {
        "oracle": 1, "relevant": 2, "misleading": 3, "irrelevant": 2}
    rows = [json.loads(x) for x in (tmp_path / "out" / "selection.jsonl").read_text().splitlines()]
    assert len(rows) == 4  # 2 steps x 1 group of 2
    for pair in (rows[:2], rows[2:]):
        assert pair[0]["game_id"] == pair[1]["game_id"]  # one group: one game
    if profile in ("no_skill", "mixed_task_reward"):  # TRL's advantage untouched: no selector stream
        assert all("selector_advantage" not in r for r in rows)
    else:
        assert all(isinstance(r["selector_advantage"], float) for r in rows)
    if profile == "no_skill":
        assert all(r["slate"] == [] and not r["with_oracle"] for r in rows)
        assert all(role is None for r in rows for role in r["read_roles"])  # nothing on a slate to read
    else:
        assert all(len(r["slate"]) == (7 if profile == "hybrid_slate" and i % 2 else 8) for i, r in enumerate(rows))
    if profile == "task-mask-only":
        assert all(r["selector_advantage"] == 0.0 for r in rows)
    if profile == "hybrid_slate":  # rollout 0 sees the oracle, rollout 1 its twin without it
        assert [r["with_oracle"] for r in rows] == [True, False, True, False]
        for shown, twin in (rows[:2], rows[2:]):
            measured = shown["success"] is not None and twin["success"] is not None
            regret = float(shown["success"]) - float(twin["success"]) if measured else 0.0
            assert shown["selector_advantage"] == regret and twin["selector_advantage"] == 0.0
    if profile in ("clean-oracle", "mixed_separated"):
        assert all(r["utility"] == (1.0 if r["reads"] and set(r["reads"]) & set(r["slate"]) == {r["oracle"]}
                                    and all(n == r["oracle"] for n in r["reads"] if n in r["slate"]) else 0.0)
                   for r in rows if r["success"] is not None)
