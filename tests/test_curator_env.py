"""The torch-free half of curator training: reward arithmetic, task groups, and the curator
environment TRL will drive (Algorithm 1), on real generated ALFWorld games."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import partial

import pytest

from conftest import ROOT

from skillos.training.curator.groups import build_groups
from skillos.training.curator.reward import Reward, Rollout, ShortRollout, group_rewards, health
from skillos.training.curator.reward import reward as _reward


def reward(rollout, group_size):  # the paper's weights (the config's reward defaults)
    return _reward(rollout, group_size, lambda_fc=1.0, lambda_cnt=0.1, lambda_comp=0.05)


def test_composite_reward_with_the_paper_weights():
    r = reward(Rollout([False, True, True, False], ops_valid=3, ops_total=4,
                       verdicts=[True, None, False], repo_words=50, input_words=200), 4)
    assert r.r_task == pytest.approx(2 / 3) and r.r_fc == 0.75 and r.r_cnt == 0.5
    assert r.r_comp == pytest.approx(0.75)
    assert r.total == pytest.approx(2 / 3 + 1.0 * 0.75 + 0.1 * 0.5 + 0.05 * 0.75)


def test_nothing_to_measure_is_none_not_zero():
    r = reward(Rollout([True, None, None]), 3)
    assert r.total is None and r.r_task is None and r.r_fc is None and r.r_cnt is None
    assert r.measured == 0 and r.denominator == 2
    with pytest.raises(ShortRollout):
        reward(Rollout([True]), 3)


def test_unmeasured_rollouts_get_the_group_mean_and_the_health_line_counts_them():
    rewards = [Reward(None, None, None, None, None, 0, 9), Reward(1.0, 1, None, None, None, 9, 9),
               Reward(0.5, 0.5, None, None, None, 8, 9)]
    assert group_rewards(rewards) == [0.75, 1.0, 0.5]
    line = health(rewards, [Rollout([], coerced_actions=2)] * 3).line()
    assert line == ("reward health: positions measured median 8 (min 0, max 9) of 9 over 3 "
                    "rollouts; 1 unmeasured rollouts neutralised; 6 actions coerced; r_task supplies 100% "
                    "of within-group reward variance")


def test_the_health_line_says_how_much_of_the_reward_variance_r_task_supplies():
    from skillos.training.curator.reward import task_share

    # group a: r_task varies (0 / 1), r_fc varies too; group b: only r_fc varies
    rewards = [Reward(1.0, 0.0, 1.0, None, None, 1, 1), Reward(1.5, 1.0, 0.5, None, None, 1, 1),
               Reward(1.0, 0.0, 1.0, None, None, 1, 1), Reward(0.5, 0.0, 0.5, None, None, 1, 1)]
    share, reason = task_share(rewards, ["a", "a", "b", "b"])
    # cov(r_task, total): 0.25 (group a), 0 (group b); var(total): 0.125 + 0.125
    assert share == 1.0 and reason is None
    share, _ = task_share(rewards[:2], ["a", "a"])
    assert share == 2.0  # r_fc moved against r_task: r_task supplies more than the whole
    share, _ = task_share(rewards[2:], ["b", "b"])
    assert share == 0.0  # the totals vary only by format: r_task carries no signal
    flat = [Reward(1.0, 1.0, None, None, None, 1, 1)] * 2
    share, reason = task_share(flat, ["a", "a"])
    assert share is None and "nothing to learn" in reason
    assert "r_task share unmeasured (no within-group reward variance" in health(flat, [Rollout([])] * 2, ["a", "a"]).line()


def test_the_negative_control_keeps_each_groups_rewards_but_not_their_owners():
    from skillos.training.common.grpo import shuffled_within_groups

    values, groups = [0, 1, 2, 3, 10, 11, 12, 13], list("aaaabbbb")
    shuffled = shuffled_within_groups(values, groups, "seed")
    assert sorted(shuffled[:4]) == [0, 1, 2, 3] and sorted(shuffled[4:]) == [10, 11, 12, 13]
    assert shuffled != values and shuffled == shuffled_within_groups(values, groups, "seed")


@dataclass(frozen=True)
class G:
    id: str
    task_type: str


POOL = [G(f"{t}-{i}", t) for t in "abc" for i in range(7)]


def test_groups_are_same_type_round_robin_and_do_not_repeat_early():
    groups = build_groups(POOL, 3, 6, seed=1, grouping="task_type", curriculum="none")
    assert all(len({g.split("-")[0] for g in grp.game_ids}) == 1 for grp in groups)
    assert sorted(grp.task_type for grp in groups) == list("aabbcc")
    assert len({i for grp in groups for i in grp.game_ids}) == 18  # 6 groups x 3, all distinct
    assert build_groups(POOL, 3, 6, seed=1, grouping="task_type", curriculum="none") == groups
    assert build_groups(POOL, 3, 6, seed=2, grouping="task_type", curriculum="none") != groups


def test_the_natural_distribution_ablation_mixes_types_as_the_pool_holds_them():
    """training.grouping natural: each group is the next |G| tasks of one seeded permutation of
    the whole pool, so types mix (a group of several is labelled mixed) in the pool's proportions,
    without repeats until the pool is used up."""
    skewed = [G(f"a-{i}", "a") for i in range(12)] + [G(f"b-{i}", "b") for i in range(3)]
    groups = build_groups(skewed, 3, 5, seed=1, grouping="natural", curriculum="none")
    drawn = [i for grp in groups for i in grp.game_ids]
    assert len(drawn) == len(set(drawn)) == 15  # one pass over the pool, nothing twice
    assert sum(i.startswith("b-") for i in drawn) == 3  # the pool's own proportions, 3 of 15
    assert any(grp.task_type == "mixed" for grp in groups)
    assert all(grp.task_type == ("mixed" if len({i[0] for i in grp.game_ids}) > 1 else grp.game_ids[0][0])
               for grp in groups)
    assert build_groups(skewed, 3, 5, seed=1, grouping="natural", curriculum="none") == groups


def test_the_curriculum_ablation_orders_what_a_run_reads_easiest_first():
    """training.curriculum easy_first: each block of `consumed` groups sorted by its tasks' mean
    expert-walkthrough length (the same groups, reordered, renumbered); TRL is told not to shuffle
    them; tasks with no walkthrough length are a one-line error."""
    from skillos import config as cfgmod
    from skillos.errors import ConfigError
    from skillos.training.common.grpo import grpo_kwargs

    @dataclass(frozen=True)
    class Walked:
        id: str
        task_type: str
        oracle_steps: int

    pool = [Walked(f"{t}-{i}", t, steps + i) for t, steps in (("a", 9), ("b", 3), ("c", 6)) for i in range(6)]
    plain = build_groups(pool, 3, 8, seed=1, grouping="task_type", curriculum="none")
    easy = build_groups(pool, 3, 8, seed=1, curriculum="easy_first", consumed=4, grouping="task_type")
    mean = {g.id: g.oracle_steps for g in pool}

    def difficulty(grp):
        return sum(mean[i] for i in grp.game_ids) / 3

    assert [d for d in map(difficulty, easy[:4])] == sorted(map(difficulty, plain[:4]))
    assert [d for d in map(difficulty, easy[4:])] == sorted(map(difficulty, plain[4:]))
    assert {grp.game_ids for grp in easy} == {grp.game_ids for grp in plain} and [g.index for g in easy] == list(range(8))
    with pytest.raises(ConfigError, match="oracle_steps"):
        build_groups(POOL, 3, 6, seed=1, curriculum="easy_first", grouping="task_type")
    cfg = cfgmod.with_sets(cfgmod.load(ROOT / "training" / "configs" / "cpu-smoke.yaml"), ["training.curriculum=easy_first"])
    assert grpo_kwargs(cfg, cpu=True)["shuffle_dataset"] is False
    assert "shuffle_dataset" not in grpo_kwargs(cfgmod.load(ROOT / "training" / "configs" / "cpu-smoke.yaml"), cpu=True)
    with pytest.raises(cfgmod.ConfigError, match="training.grouping: 'by_type' is not one of task_type, natural"):
        cfgmod.with_sets(cfg, ["training.grouping=by_type"])


def test_an_interleaved_curriculum_gives_every_step_one_group_of_each_type():
    """training.curriculum interleaved: the rows as drawn (types in turns) and TRL told not to
    shuffle them, so TRL's own sampler hands each step of two prompts one group of each type;
    shuffled, some steps hold one type alone. Natural groups have no types to take in turns."""
    from trl.trainer.utils import RepeatSampler
    from skillos import config as cfgmod
    from skillos.training.common.grpo import build_args
    from skillos.training.curator.trainer import dataset_rows

    pool = [G(f"{t}-{i}", t) for t in ("pick_heat_then_place_in_recep", "pick_clean_then_place_in_recep")
            for i in range(12)]
    base = cfgmod.load(ROOT / "training" / "configs" / "canary-curator.yaml")

    def steps(cfg):
        args = build_args(cfg, cpu=True)
        rows = dataset_rows(cfg, pool)
        prompts = args.generation_batch_size // args.num_generations
        order = list(RepeatSampler(rows, args.num_generations, prompts, shuffle=args.shuffle_dataset, seed=args.seed))
        flat = [rows[i]["task_type"] for i in order[::args.num_generations]]
        return [sorted(flat[i:i + prompts]) for i in range(0, len(flat), prompts)]

    interleaved = steps(cfgmod.with_sets(base, ["training.curriculum=interleaved"]))
    assert len(interleaved) >= 40 and all(len(set(step)) == 2 for step in interleaved)
    shuffled = steps(cfgmod.with_sets(base, ["training.curriculum=none"]))
    assert any(len(set(step)) == 1 for step in shuffled)  # TRL's shuffle: some steps one type alone
    with pytest.raises(cfgmod.ConfigError, match="curriculum interleaved takes task types in turns"):
        cfgmod.with_sets(base, ["training.curriculum=interleaved", "training.grouping=natural"])


def test_the_optimizer_and_sampler_knobs_reach_trls_arguments_under_their_names():
    """training.weight_decay, max_grad_norm and top_k are GRPOConfig's; unset, TRL's defaults stand
    (and a config's hash is the one published before they existed)."""
    from skillos import config as cfgmod
    from skillos.training.common.grpo import build_args

    base = cfgmod.load(ROOT / "training" / "configs" / "canary-curator.yaml")
    args = build_args(cfgmod.with_sets(base, ["training.weight_decay=0.01", "training.max_grad_norm=0",
                                              "training.top_k=50"]), cpu=True)
    assert (args.weight_decay, args.max_grad_norm, args.top_k) == (0.01, 0.0, 50)
    plain = build_args(cfgmod.with_sets(base, ["training.weight_decay=null", "training.max_grad_norm=null",
                                               "training.top_k=null"]), cpu=True)  # unset: TRL's own
    assert (plain.weight_decay, plain.max_grad_norm, plain.top_k) == (0.0, 1.0, 0)
    unset = cfgmod.with_sets(base, ["training.top_k=null"])
    assert cfgmod.with_sets(base, ["training.top_k=0"]).hash() != unset.hash()
    with pytest.raises(cfgmod.ConfigError, match="training.max_grad_norm"):
        cfgmod.with_sets(base, ["training.max_grad_norm=-1"])


def test_groups_are_the_same_in_every_process():
    code = ("import json; from dataclasses import dataclass\n"
            "from skillos.training.curator.groups import build_groups\n"
            "@dataclass(frozen=True)\nclass G:\n    id: str\n    task_type: str\n"
            "pool = [G(f'{t}-{i}', t) for t in 'abc' for i in range(7)]\n"
            "print(json.dumps([g.row() for g in build_groups(pool, 3, 6, seed=1, grouping='task_type', curriculum='none')]))")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outs) == 1
    assert json.loads(outs.pop()) == [g.row() for g in build_groups(POOL, 3, 6, seed=1, grouping="task_type", curriculum="none")]


@pytest.fixture
def setup(game_cache):
    from skillos.evals.envs.household.heuristic import HeuristicExecutor
    from skillos.evals.envs.alfworld.env import AlfworldEnv
    from skillos.evals.envs.alfworld.games import make_games
    from skillos.training.curator.env import Setup

    pool = make_games("train", 18, 0)
    return Setup({g.id: g for g in pool}, HeuristicExecutor(), partial(AlfworldEnv, fast=True), 3, max_steps=30,
                 top_k=5, retrieval_mode="bm25"), pool


def test_curate_and_advance_applies_ops_then_plays_the_next_task(setup):
    from skillos.training.common.trl_compat import published_tools
    from skillos.training.curator.env import CuratorEnv, finish

    setup, pool = setup
    assert published_tools(CuratorEnv) == ["curate_and_advance"]
    group = build_groups(pool, 3, 1, seed=0, grouping="task_type", curriculum="none")[0]
    env = CuratorEnv(setup)
    first = env.reset(**group.row())
    assert first.startswith("Task 1 of 3:") and "Result:" in first
    text = env.curate_and_advance([
        {"op": "insert", "skill_name": "find-things", "content": "Where to look first\nCheck the countertops."},
        {"op": "update", "skill_name": "find-things", "new_content": "Where to look\nCabinets too."},
        {"op": "insert", "skill_name": "Bad Name", "content": "x"},
        {"op": "delete", "skill_name": "missing"},
        "not an op",
    ])
    assert "- insert find-things: ok" in text and "- update find-things: ok" in text
    assert "- insert Bad Name: refused" in text and "- delete missing: refused" in text
    assert "invalid operation" in text and "Task 2 of 3:" in text
    from skillos.training.curator.env import state_of

    # each played position keeps the skill names its executor got: none at the first, the repo's after
    assert state_of(env).retrieved[0] == [] and state_of(env).retrieved[1] in ([], ["find-things"])
    assert f"Skills retrieved: {', '.join(state_of(env).retrieved[1]) or '(none)'}" in text
    rollout = finish(env)  # the curator quits: position 3 is played with the repo frozen
    assert len(rollout.positions) == 3 and all(p is not None for p in rollout.positions)
    assert (rollout.ops_valid, rollout.ops_total) == (2, 6)  # 5 ops, and the turn that made no call
    assert rollout.repo_words > 0 and rollout.input_words > rollout.repo_words
    assert env.curate_and_advance([]) == "The rollout is over: every task has been played."


def test_a_rollout_finished_ahead_while_a_late_call_arrives_plays_each_position_once(setup):
    """The pipeline may play a rollout's unreached positions ahead of the reward while TRL makes a
    call no worker foresaw: both see a position left. However they interleave, every position is
    played once (before, a curator canary at |G| = 3 crashed on 4 positions of 3)."""
    import threading

    from skillos.training.curator.env import CuratorEnv, Setup, finish

    setup, pool = setup
    group = build_groups(pool, 3, 1, seed=0, grouping="task_type", curriculum="none")[0]
    inside, release = threading.Event(), threading.Event()

    class Slow:  # the executor holds position 3 until the late call has been made
        def __init__(self, executor):
            self.executor, self.name = executor, executor.name

        def new_episode(self, task, skills):
            if env_state.positions and len(env_state.positions) == 2:
                inside.set()
                release.wait(5)
            return self.executor.new_episode(task, skills)

    slow = Setup(**{**setup.__dict__, "executor": Slow(setup.executor)})
    env = CuratorEnv(slow)
    env.reset(**group.row())
    env.curate_and_advance([])
    env_state = env._state
    ahead = threading.Thread(target=finish, args=(env,))
    ahead.start()
    assert inside.wait(5)
    late = []
    caller = threading.Thread(target=lambda: late.append(env.curate_and_advance([])))
    caller.start()
    caller.join(0.3)  # it waits for the finishing play: it must not play position 3 a second time
    release.set()
    ahead.join(10)
    caller.join(10)
    assert late == ["The rollout is over: every task has been played."]
    assert len(finish(env).positions) == 3


def test_r_fc_counts_a_turn_with_no_parseable_call_as_a_measured_invalid_call(setup):
    """A curator that never calls the tool scores r_fc 0, measured; one that calls at every turn
    is not penalised; only an outage (a position lost) is unmeasured, and r_fc is not its place."""
    from skillos.training.curator.env import CuratorEnv, finish

    setup, pool = setup
    group = build_groups(pool, 3, 1, seed=0, grouping="task_type", curriculum="none")[0]
    silent = CuratorEnv(setup)
    silent.reset(**group.row())  # the curator's first turn had no (parseable) tool call
    r = reward(finish(silent), 3)
    assert r.r_fc == 0.0 and r.total is not None  # measured: 0 valid of 1 call, not "nothing to measure"
    assert r.total == pytest.approx(r.r_task + 0.05 * r.r_comp)
    diligent = CuratorEnv(setup)
    diligent.reset(**group.row())
    diligent.curate_and_advance([{"op": "insert", "skill_name": "a", "content": "A skill\nbody"}])
    diligent.curate_and_advance([{"op": "delete", "skill_name": "a"}])
    assert reward(finish(diligent), 3).r_fc == 1.0  # every turn called: no penalty for stopping at the end


def test_an_eval_curator_reply_with_no_call_on_the_training_surface_is_an_invalid_operation(monkeypatch):
    from skillos.config import CuratorConfig
    from skillos.evals.backends import llm_curator
    from skillos.evals.backends.chat import ChatResult
    from skillos.repo import SkillRepo

    class Chat:
        def chat(self, messages, tools=None):
            return ChatResult("nothing to change")

    monkeypatch.setattr(llm_curator, "make_chat", lambda config: Chat())
    traj = type("T", (), {"won": True, "unmeasured_reason": None, "steps": [], "task": "t", "retrieved": []})()
    trained = llm_curator.LLMCurator(CuratorConfig(backend="openai", model="m", tools="curate_and_advance"))
    applied = trained.curate(traj, SkillRepo(None))
    assert [a.ok for a in applied] == [False] and trained.unmeasured_calls == 0  # measured, invalid
    paper = llm_curator.LLMCurator(CuratorConfig(backend="openai", model="m", tools="paper"))
    assert paper.curate(traj, SkillRepo(None)) == []  # the paper's surface: "call none if nothing should change"


def test_a_rollout_refuses_games_outside_the_training_pool(setup):
    from skillos.training.curator.env import CuratorEnv

    setup, _ = setup
    with pytest.raises(KeyError, match="not in the training pool"):
        CuratorEnv(setup).reset(game_ids=["valid_unseen-0000"] * 3)
    with pytest.raises(ValueError, match="training.group_size is 3"):
        CuratorEnv(setup).reset(game_ids=["a"])


def test_a_write_past_the_repos_bound_is_refused_and_changes_nothing(setup):
    """training.max_instructions: a write that would leave the repo telling the executor more
    procedures than it holds is refused (an invalid operation, said in the tool result), and the
    repo stays as it was; a replacement that keeps it within the bound is applied."""
    from dataclasses import replace

    from skillos.evals.curation import Capacity
    from skillos.evals.envs.household.heuristic.reading import procedures
    from skillos.training.curator.env import CuratorEnv, finish, state_of

    setup, pool = setup
    bounded = replace(setup, capacity=Capacity(1, procedures, "training.max_instructions"))
    group = build_groups(pool, 3, 1, seed=0, grouping="task_type", curriculum="none")[0]
    env = CuratorEnv(bounded)
    env.reset(**group.row())
    text = env.curate_and_advance([
        {"op": "insert", "skill_name": "heating", "content": "Heat the X with the microwave. Then put it in the Y."},
        {"op": "insert", "skill_name": "both", "content": "Warm it in the microwave, then chill it in the fridge."},
        {"op": "insert", "skill_name": "places", "content": "Where apples are\nApples are usually on the countertop."},
    ])
    assert "- insert heating: ok" in text and "- insert places: ok" in text
    assert ("- insert both: refused: the skills would tell how to cool, heat; the repo holds at most 1 "
            "(training.max_instructions)") in text
    assert [s.name for s in state_of(env).repo.skills] == ["heating", "places"]  # nothing of the refused write
    text = env.curate_and_advance([
        {"op": "insert", "skill_name": "cleaning", "content": "Clean the X with the sinkbasin."},
        {"op": "update", "skill_name": "heating", "new_name": "cleaning", "new_content": "Rinse it in the sink."},
    ])
    assert "- insert cleaning: refused" in text and "- update heating: ok" in text
    assert sorted(s.name for s in state_of(env).repo.skills) == ["cleaning", "places"]
    rollout = finish(env)
    assert (rollout.ops_valid, rollout.ops_total) == (3, 5)  # the refused writes are measured invalid operations


def test_what_a_skill_tells_the_executor_is_counted_as_the_executor_reads_it():
    from skillos.evals.envs.household.heuristic.reading import procedures
    from skillos.repo import Skill

    def told(text):
        return set(procedures(Skill("s", "a skill", text)))

    assert told("Heat the X with the microwave. Then put it in the Y.") == {"heat"}
    assert told("Never cool it in the sink; use the fridge.") == {"cool"}  # what to avoid tells it too
    assert told("Wash it, then warm it up.") == {"clean", "heat"}
    assert told("Hold the X and turn on the desklamp.") == {"look"}
    assert told("Apples are usually on the countertop. Then put it in the Y.") == set()
    assert told("Clean the X with the sinkbasin. Then switch on the Y.") == {"clean", "look"}  # a look task's Y is its lamp


@pytest.mark.parametrize("text", [
    "Heat the X with the microwave. Then put it in the Y.", "Microwave it, then put it in the Y.",
    "To clean an object, use the sinkbasin.", "Go to the sink. Wash it. Never use the bathtub.",
    "Don't put the X in the Y before chilling it.", "Use the fridge to cool it; switch on the Y.",
    "Put it in the Y first, then heat it.", "Hold the X and turn on the desklamp.", "Use the Y."])
def test_every_procedure_a_task_takes_from_a_skill_is_counted(text):
    """The bound is only as good as its count: whatever a task of each kind takes from a skill
    (`guidance(...).said`), the skill is counted as telling that procedure."""
    from skillos.evals.envs.alfworld.text import parse_goal
    from skillos.evals.envs.household.heuristic.reading import guidance, procedures
    from skillos.repo import Skill

    skill = Skill("s", "a skill", text)
    tasks = {"heat": "heat some apple and put it in countertop.", "cool": "cool some apple and put it in countertop.",
             "clean": "clean some apple and put it in countertop.", "look": "look at apple under the desklamp."}
    taken = {kind for kind, task in tasks.items() if guidance(parse_goal(task), task, [skill]).said}
    assert taken and taken <= procedures(skill)


def test_a_repo_bound_in_an_environment_that_cannot_count_it_is_one_line():
    from types import SimpleNamespace

    from skillos.config import load
    from skillos.config.loading import with_sets
    from skillos.errors import SkillosError
    from skillos.evals.envs.registry import environment
    from skillos.training.curator import env as curator_env

    cfg = load(ROOT / "training" / "configs" / "canary-curator.yaml")
    with pytest.raises(SkillosError, match=r"^training.max_instructions: env reasoning cannot say") as err:
        curator_env.capacity(cfg, SimpleNamespace(name="reasoning"))
    assert "\n" not in str(err.value)
    assert curator_env.capacity(cfg, environment(cfg)).most == 1
    assert curator_env.capacity(with_sets(cfg, ["training.max_instructions=null"]), SimpleNamespace(name="x")) is None


def test_a_repo_already_past_its_bound_may_still_shrink():
    """A write is refused only when it leaves the repo telling more than the bound and more than
    before: a repo loaded past it can still lose a procedure, never gain one."""
    from skillos.evals.curation import Capacity, apply_op
    from skillos.evals.envs.household.heuristic.reading import procedures
    from skillos.repo import SkillRepo

    repo = SkillRepo(None)
    repo.insert("heating", "Heat the X with the microwave.")
    repo.insert("cleaning", "Clean the X with the sinkbasin.")
    bound = Capacity(1, procedures, "training.max_instructions")
    assert not apply_op(repo, {"op": "insert", "skill_name": "cooling", "content": "Cool the X with the fridge."},
                        bound).ok
    assert apply_op(repo, {"op": "update", "skill_name": "cleaning", "new_content": "Then put it in the Y."}, bound).ok
    assert apply_op(repo, {"op": "delete", "skill_name": "heating"}, bound).ok and len(repo) == 1


def test_gate_one_reads_the_repo_bound_and_refuses_an_environment_that_cannot_count_it(monkeypatch):
    """training.max_instructions is a key a gate reads (so `gate check --trace` follows it to the
    rollouts' setup): PASS where the environment counts procedures, FAIL before any compute where it
    cannot, SKIP when unset."""
    from skillos import gates
    from skillos.config import load
    from skillos.config.loading import with_sets
    from skillos.evals.envs.household.environment import Household

    cfg = load(ROOT / "training" / "configs" / "canary-curator.yaml")
    report = gates.check(cfg, trace=True)
    results = {r.check: r for r in report.results}
    assert results["repo-bound"].status == "PASS" and results["repo-bound"].seen == 1
    row = {row.key: row for row in report.trace}["training.max_instructions"]
    assert row.applied is True and row.arrived == 1 and "CuratorEnv" in row.consumer
    unset = {r.check: r for r in gates.check(with_sets(cfg, ["training.max_instructions=null"])).results}
    assert unset["repo-bound"].status == "SKIP"
    monkeypatch.delattr(Household, "instructs")
    (refused,) = [r for r in gates.check(cfg).results if r.check == "repo-bound"]
    assert refused.status == "FAIL" and "cannot say what a skill tells its executor" in refused.detail
