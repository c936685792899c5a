"""The curator method's own launch-gate checks (SkillOS): the tool surface TRL publishes, the
reward's arithmetic, real rollouts through the curator environment, the task groups the data
pipeline draws, the bound on rollouts played ahead, and the judge r_cnt needs. The gates find
this module through the method's registry entry (skillos.registry.METHODS) and run its checks
with their own; each says when it applies, as every check does.
"""

from __future__ import annotations

import functools
import math
import os
from contextlib import closing

from skillos.checking import (ROLLOUT_INCIDENT, Context, Result, dry_run, seed, static, train_pool, training_only,
                              trains_with)
from skillos.evals.envs.registry import environment
from skillos.config.derived import groups_per_step
from skillos.errors import SkillosError
from skillos.training.common.trl_compat import published_tools
from skillos.training.curator.env import CuratorEnv, capacity, finish, make_setup
from skillos.training.curator.groups import build_groups
from skillos.training.curator.reward import Rollout, ShortRollout, health, reward

ROLLOUTS = 2  # real curator rollouts in a dry run: one that plays on, one that quits at once
MIN_JUDGE_TOKENS = 1024  # a judge cut shorter truncates its verdict on a skill's content


def curator_training(fn):
    """A check of the curator's training rollouts: another method's trainer (skillgate.trainer) has
    its method's own rollout checks, so here it is a SKIP that says so."""
    @functools.wraps(fn)
    def check(ctx: Context):
        if ctx.training and not trains_with(ctx.cfg, __name__):
            return Result(fn.__name__.replace("_", "-"), (3,), "SKIP",
                          detail=f"skillgate.trainer {ctx.cfg.skillgate.trainer}: see the selector-* checks")
        return fn(ctx)

    return check


@dry_run
@training_only(1)
@curator_training
def tool_surface(ctx: Context) -> Result:
    check, gates = "tool-surface", (1,)

    tools = published_tools(CuratorEnv)
    incident = "TRL published helper methods as tools: the curator trained on a different tool surface"
    if tools != ["curate_and_advance"]:
        return Result(check, gates, "FAIL", "tools", tools, ["curate_and_advance"], incident)
    try:
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")  # no torch is fine for a schema
        from transformers.utils import get_json_schema
    except ImportError:
        return Result(check, gates, "WARN", "tools", tools, ["curate_and_advance"], incident,
                      "schema unmeasured: transformers is not installed (the train extra)")
    try:
        schema = get_json_schema(CuratorEnv.__new__(CuratorEnv).curate_and_advance)
    except Exception as exc:  # noqa: BLE001 - transformers raises its own DocstringParsingException
        return Result(check, gates, "FAIL", "tools", tools, "a JSON schema", incident,
                      f"schema does not build: {exc}")
    params = sorted(schema["function"]["parameters"]["properties"])
    return Result(check, gates, "PASS", "tools", tools, ["curate_and_advance"], incident,
                  f"schema builds; parameters {params}")


@dry_run
@training_only(2)
def reward_arithmetic(ctx: Context) -> Result:
    check, gates = "reward-arithmetic", (2,)

    g = ctx.cfg.training.group_size or 10
    w = dict(lambda_fc=ctx.cfg.reward.lambda_fc, lambda_cnt=ctx.cfg.reward.lambda_cnt,
             lambda_comp=ctx.cfg.reward.lambda_comp)
    problems = []
    # quits after one success: the rest is played with the frozen repo, and fails
    quit_early = reward(Rollout([True, True] + [False] * (g - 2), 1, 1), g, **w).total
    plays_on = reward(Rollout([True] * g, 1, 1), g, **w).total
    if not quit_early < plays_on:
        problems.append(f"quitting after one success scored {quit_early} >= playing on {plays_on}")
    try:
        reward(Rollout([True, True], 1, 1), g, **w)
        problems.append("a rollout that reported 2 positions was scored over those 2")
    except ShortRollout:
        pass
    lost = reward(Rollout([True, True, None] + [False] * (g - 3), 1, 1), g, **w)
    if lost.measured != g - 2 or not math.isclose(lost.r_task, 1 / (g - 2)):
        problems.append(f"a position lost to infrastructure stayed in the denominator "
                        f"(r_task {lost.r_task})")
    return Result(check, gates, "FAIL" if problems else "PASS", "", None, None,
                  "rewards measured on 1 of 9 positions", "; ".join(problems) or
                  f"with |G|={g}: quit-early {quit_early:.3f} < play-on {plays_on:.3f}; "
                  f"one lost position gives r_task over {g - 2}")


@dry_run
@training_only(3)
@curator_training
def task_distribution(ctx: Context) -> Result:
    check, gates = "task-distribution", (3,)

    t = ctx.cfg.training
    pool = train_pool(ctx)
    types = {g.task_type for g in pool}
    per_step = math.ceil(groups_per_step(ctx.cfg) or 1)
    k = min(max(2 * len(types), 4), per_step * (t.max_steps or 1))
    incident = "a fixed 10-task loop cost ~64 GPU-days while every health metric looked fine"

    low, high = environment(ctx.cfg).group_sizes(ctx.cfg)
    try:
        # the draws as drawn: a curriculum reorders the same groups, it draws none
        groups = build_groups(pool, t.group_size, k, seed(ctx), low if low != high else None, grouping=t.grouping,
                              curriculum="none")
    except ValueError as exc:
        return Result(check, gates, "FAIL", "env.n_train_games", len(pool), None, incident, str(exc))
    type_of = {g.id: g.task_type for g in pool}
    by_type: dict = {}
    for group in groups:  # by each task's own type: a natural group mixes them
        for game_id in group.game_ids:
            by_type.setdefault(type_of[game_id], []).append(game_id)
    problems = []
    eligible = {tt for tt in types if sum(g.task_type == tt for g in pool) >= t.group_size}
    if len(by_type) < min(k, len(eligible)):
        problems.append(f"{len(by_type)} task types in {k} groups, {len(eligible)} available")
    if len({frozenset(g.game_ids) for g in groups}) < len(groups):
        problems.append("a group repeats")
    for kind, ids in by_type.items():
        available = sum(g.task_type == kind for g in pool)
        if len(set(ids)) < min(len(ids), available):
            problems.append(f"{kind}: {len(set(ids))} distinct tasks in {len(ids)} draws from a "
                            f"pool of {available}")
    detail = (f"first {k} groups: {len(by_type)} task types, "
              f"{len({i for g in groups for i in g.game_ids})} distinct tasks in "
              f"{sum(len(g.game_ids) for g in groups)} draws from a pool of {len(pool)}")
    return Result(check, gates, "FAIL" if problems else "PASS", "env.n_train_games", len(pool),
                  f"enough for {k} non-repeating groups of {t.group_size}", incident,
                  "; ".join(problems + [detail]))


@dry_run
@curator_training
def rollout_positions(ctx: Context) -> Result | list:
    """The curator's training rollouts through the real curator environment: one that plays on and
    one that quits at once, each measured over every position (finish plays the rest)."""
    check, gates, incident = "rollout-positions", (3,), ROLLOUT_INCIDENT
    if not ctx.training:
        return []  # an eval's rollouts: skillos.gates.dryrun's rollout-positions

    g = ctx.cfg.training.group_size
    pool = train_pool(ctx)
    rollouts, rewards, short = [], [], 0
    with closing(make_setup(ctx.cfg, pool)) as setup:  # its engine workers, if any, stop after
        for i, group in enumerate(build_groups(pool, g, ROLLOUTS, seed(ctx), setup.min_group_size,
                                               grouping=ctx.cfg.training.grouping, curriculum="none")):
            size = len(group.game_ids)  # reasoning draws |G| per group from a range
            env = CuratorEnv(setup)
            env.reset(**group.row())
            if i == 0:  # plays on; the other quits at once and finish() plays the rest
                for _ in range(size - 1):
                    env.curate_and_advance([])
            rollout = finish(env)
            rollouts.append(rollout)
            w = ctx.cfg.reward
            rewards.append(reward(rollout, size, w.lambda_fc, w.lambda_cnt, w.lambda_comp))
            short += rewards[-1].measured < size - 1
    h = health(rewards, rollouts)
    ok = h.measured_min is not None and not short
    return Result(check, gates, "PASS" if ok else "FAIL", "positions measured per rollout",
                  f"min {h.measured_min} of {h.denominator}", f">= {rewards[0].denominator if rewards else g - 1}",
                  incident, f"{h.line()} ({h.coerced_actions / max(1, sum(len(r.positions) for r in rollouts)):.2f} "
                  "per position)")


@static
@training_only(1, 3)
def completion_length(ctx: Context) -> Result:
    """TRL caps a whole multi-turn rollout at max_completion_length: it must hold |G| curator turns
    (|G| - 1 are generated, the turn after the last iteration is not: the margin holds the tool
    answers between them)."""
    check, gates = "completion-length", (1, 3)
    t = ctx.cfg.training
    if not trains_with(ctx.cfg, __name__):
        return Result(check, gates, "SKIP", detail=f"skillgate.trainer {ctx.cfg.skillgate.trainer}: no |G| curator "
                      "turns to hold")
    turn = t.max_turn_tokens or (ctx.reference.values.get("training.max_turn_tokens") if ctx.reference else None) \
        or 4096
    need = (t.group_size or 0) * turn
    seen = t.max_completion_length
    ok = seen is not None and t.group_size is not None and seen >= need
    result = ctx.expect(check, gates, "training.max_completion_length", seen,
                        f">= {need} (group_size {t.group_size} x {turn} per curator turn)", ok,
                        "TRL caps the whole multi-turn rollout: 4096 silently stopped rollouts at "
                        "~3 of 10 positions")
    result.reads = ("training.group_size", "training.max_turn_tokens")
    return result


@static
@training_only(1)
def repo_bound(ctx: Context) -> Result:
    """training.max_instructions bounds a rollout's repo by the procedures its environment reads in
    a skill: an environment that cannot count them is refused here, before any compute."""
    check, gates, most = "repo-bound", (1,), ctx.cfg.training.max_instructions
    incident = "a bound on the repo that no rollout applies: a miniature a constant skill wins"
    if not trains_with(ctx.cfg, __name__):
        return Result(check, gates, "SKIP", detail=f"skillgate.trainer {ctx.cfg.skillgate.trainer}: no curator repo")
    if most is None:
        return Result(check, gates, "SKIP", detail="training.max_instructions unset: a rollout's repo is unbounded")
    try:
        capacity(ctx.cfg, environment(ctx.cfg))
    except SkillosError as exc:
        return Result(check, gates, "FAIL", "training.max_instructions", most, "an environment that counts them",
                      incident, str(exc))
    return Result(check, gates, "PASS", "training.max_instructions", most, "an environment that counts them",
                  incident, f"a write leaving the repo telling more than {most} procedure(s) is refused")


@static
@training_only(1)
def staleness_bound(ctx: Context) -> Result:
    """Rollouts played ahead (training.async_rollouts) need a bound on how old their policy may be;
    no declared divergence lifts it: unbounded staleness is refused."""
    check, gates, t = "staleness-bound", (1,), ctx.cfg.training
    incident = "rollouts of unbounded staleness: a trainer learning from a policy arbitrarily older than its own"
    if not t.async_rollouts:
        return Result(check, gates, "PASS", "training.max_staleness", 0, "on-policy, or a bound", incident,
                      "on-policy: every step's rollouts come from the policy it trains")
    if t.max_staleness is None:
        return Result(check, gates, "FAIL", "training.max_staleness", None, "a bound in optimizer steps",
                      incident, "training.async_rollouts is on with no training.max_staleness; set it (1: one "
                      "step ahead, all skillos plays)")
    return Result(check, gates, "PASS", "training.max_staleness", t.max_staleness, "a bound in optimizer steps",
                  incident, f"rollouts at most {t.max_staleness} optimizer step(s) behind the step that trains on them; "
                  "a batch past it is discarded and generated again")


@static
@training_only(2)
def judge(ctx: Context) -> Result:
    check, gates = "judge", (2,)
    if not trains_with(ctx.cfg, __name__):
        return Result(check, gates, "SKIP", detail=f"skillgate.trainer {ctx.cfg.skillgate.trainer}: the reward is the "
                      "game outcome; no judge")
    lam = ctx.cfg.reward.lambda_cnt
    if not lam:
        return Result(check, gates, "SKIP", "reward.lambda_cnt", lam, None,
                      detail="r_cnt is off (lambda_cnt 0): no judge needed")
    j = ctx.cfg.judge
    problems = [m for m, bad in (("judge.backend unset", j.backend is None),
                                 ("judge.model unset", j.model is None),
                                 (f"judge.max_tokens {j.max_tokens} < {MIN_JUDGE_TOKENS}",
                                  j.max_tokens is None or j.max_tokens < MIN_JUDGE_TOKENS)) if bad]
    result = ctx.expect(check, gates, "judge.max_tokens" if j.backend else "judge.backend",
                        j.max_tokens if j.backend else j.backend,
                        f"a wired judge with max_tokens >= {MIN_JUDGE_TOKENS}", not problems,
                        f"lambda_cnt {lam:g} > 0 with an unwired or truncated judge scores every "
                        "skill's content as unmeasured or 0", "; ".join(problems))
    result.reads = ("judge.model", "reward.lambda_cnt")
    return result
