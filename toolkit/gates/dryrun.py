"""Dry-run checks: they execute the code a launch will run, on scripted and on real rollouts.

Scripted ones drive the real runner, reward and curator environment with a stand-in game or a
failing executor (the thing under test is the toolkit's own code path). Real ones play a few
ALFWorld games with the configured executor, sample the task groups the data pipeline will
yield, and hash the splits (the disk check, which plays nothing, is a machine check: `plan` runs it).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import threading
import time
from contextlib import closing

from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
from skillos.gates.core import Context, Result, dry_run, machine, training_only
from skillos.registry import trainer_of, uses_model
from skillos.safety import Ticker
from skillos.config.derived import groups_per_step, training_output_dir
from skillos.evals import stats
from skillos.evals.arms import arm_settings, load_games
from skillos.evals.envs.registry import environment
from skillos.evals.protocol import PINS, load_spec
from skillos.evals.runner import ArmAborted, MIN_GAMES_FOR_ABORT, play, run_arm
from skillos.evals.slate_eval import config_pins
from skillos.repo import Retriever, SkillRepo
from skillos.training.curator.env import CuratorEnv, Setup, finish, make_setup, published_tools
from skillos.training.curator.groups import build_groups
from skillos.training.curator.reward import Reward, Rollout, ShortRollout, group_rewards, health, reward, task_reward

GIB = 1024 ** 3
ROLLOUTS = 2  # real curator rollouts in a dry run: one that plays on, one that quits at once
SCRIPTED = dict(retrieval_mode="bm25", concurrency=1, wave_size=1)  # the sentinels' one-game arms
EVAL_GAMES = 3  # real games in an eval dry run
_clock = time.monotonic  # times an executor's actions (tests replace it)


class _Paced:
    """The configured executor, its actions counted into progress lines (per 10 s at most), and
    after the first one, how long the rest can take at most: a model's action on a CPU can take
    seconds, and a dry run of a few games would otherwise be silent for minutes."""

    def __init__(self, executor, progress, most: int):
        self._executor, self._progress, self._most, self._done = executor, progress, most, 0
        self._tick, self._lock = Ticker(progress, "  dry run: executor actions", most), threading.Lock()

    def __getattr__(self, name):  # name, deterministic, ...: the executor's own
        return getattr(self._executor, name)

    def new_episode(self, task, skills):
        return _PacedEpisode(self._executor.new_episode(task, skills), self)

    def acted(self, seconds: float) -> None:
        with self._lock:
            self._done += 1
            if self._done == 1 and seconds * (self._most - 1) > 60:
                self._progress(f"  dry run: the first action took {seconds:.1f} s; up to {self._most - 1} more "
                               f"(games x env.max_steps): at most ~{seconds * (self._most - 1) / 60:.0f} min")
            self._tick(self._done)


class _PacedEpisode:
    def __init__(self, episode, paced: _Paced):
        self._episode, self._paced = episode, paced

    def __getattr__(self, name):  # reads, ...: the episode's own
        return getattr(self._episode, name)

    def act(self, observation, admissible):
        started = _clock()
        try:
            return self._episode.act(observation, admissible)
        finally:
            self._paced.acted(_clock() - started)


# -- stand-ins for scripted rollouts -----------------------------------------------------------
class _Failing:
    """An executor whose every call fails the way remote models fail."""

    name = "failing"

    def __init__(self, exc: Exception):
        self.exc = exc

    def new_episode(self, task, skills):
        return self

    def act(self, observation, admissible):
        raise self.exc


class _Recording:
    name = "recording"

    def __init__(self):
        self.skills_seen: list[int] = []

    def new_episode(self, task, skills):
        self.skills_seen.append(len(skills))
        return self

    def act(self, observation, admissible):
        return "take mug"


def _games(ctx: Context, split: str, n: int):
    key = ("games", split, n)
    if key not in ctx.cache:
        ctx.cache[key] = load_games(ctx.cfg, split, n, progress=_generation_progress(ctx, split))
    return ctx.cache[key]


def _generation_progress(ctx: Context, split: str):
    """A first run generates its games here (a minute or more): say so, every ~10%, instead of
    going silent before the first check line."""
    return Ticker(ctx.progress, f"  generating {split} games for the dry-run")  # per 10% or per 10 s
def curator_training(fn):
    """A check of the curator's training rollouts: another trainer (skillgate.trainer) has its
    own dry-run checks below, so here it is a SKIP that says so."""
    import functools

    @functools.wraps(fn)
    def check(ctx: Context):
        if ctx.training and not trainer_of(ctx.cfg).curates:
            return Result(fn.__name__.replace("_", "-"), (3,), "SKIP",
                          detail=f"skillgate.trainer {ctx.cfg.skillgate.trainer}: see the selector-* checks")
        return fn(ctx)

    return check


def _train_pool(ctx: Context):
    return _games(ctx, ctx.cfg.env.train_split, ctx.cfg.env.n_train_games)


# -- gate 1 ----------------------------------------------------------------------------------
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
def top_k_used(ctx: Context) -> Result:
    """The number of skills the executor actually receives, through the launch's own path."""

    if ctx.training and not trainer_of(ctx.cfg).curates:
        return Result("top-k-used", (1,), "SKIP", detail=f"skillgate.trainer {ctx.cfg.skillgate.trainer}: the "
                      "slate is the protocol; retrieval plays no part")
    settings = arm_settings(ctx.cfg)
    repo = SkillRepo(None)
    for i in range(settings["top_k"] + 3):
        repo.insert(f"mug-skill-{i}", f"How to put a clean mug in the coffeemachine, variant {i}.")
    executor = _Recording()
    play(ScriptedEnv(), executor, Retriever(repo, ctx.cfg.retrieval.mode), ScriptedGame("g"),
         1, settings["top_k"])
    seen = executor.skills_seen[0] if executor.skills_seen else None
    expected = ctx.reference.values.get("retrieval.top_k") if ctx.reference else None
    expected = ctx.cfg.retrieval.top_k if expected is None else expected
    return ctx.expect("top-k-used", (1,), "retrieval.top_k", seen, expected, seen == expected,
                      "the executor saw a different number of skills than configured",
                      f"the executor received {seen} of {len(repo)} matching skills")


# -- gate 2 ----------------------------------------------------------------------------------
@dry_run
def sentinels(ctx: Context) -> Result:
    """No code path turns an API error, a timeout or a parse failure into a failure or a 0."""

    check, gates = "sentinels", (2,)
    incident = "an API outage scored as failures became a p <= 0.0005 'effect'"
    problems = []
    errors = (TimeoutError("executor timed out"), ConnectionError("HTTP 503 from the endpoint"),
              ValueError("unparseable model reply"))
    for exc in errors:
        rows = run_arm("sentinel", [ScriptedGame("g1")], env=ScriptedEnv(), executor=_Failing(exc),
                       repo=None, max_steps=3, top_k=ctx.cfg.retrieval.top_k, **SCRIPTED)
        if rows[0]["success"] is not None or not rows[0]["unmeasured"]:
            problems.append(f"{type(exc).__name__} scored as success={rows[0]['success']}")
    rows = run_arm("sentinel", [ScriptedGame("g2", path="missing")], env=ScriptedEnv(),
                   executor=_Recording(), repo=None, max_steps=3, top_k=1, **SCRIPTED)
    if rows[0]["success"] is not None:
        problems.append("an env failure was scored")
    comp = stats.compare({"a": True, "b": False}, {"a": None, "b": True}, alpha=ctx.cfg.eval.alpha,
                         power=ctx.cfg.eval.power, n_boot=100)
    if comp.n_paired != 1 or comp.n_dropped != 1:
        problems.append("the comparison kept a pair with an unmeasured game")
    if task_reward([True, None, None], 3) is not None:
        problems.append("a rollout with no measured position got a reward of its own")
    filled = group_rewards([Reward(None, None, None, None, None, 0, 2),
                            Reward(1.0, 1.0, None, None, None, 2, 2)])
    if filled[0] != 1.0:
        problems.append("an unmeasured rollout was not given the group mean")
    budget = ctx.cfg.eval.max_error_rate
    games = [ScriptedGame(f"o{i}") for i in range(MIN_GAMES_FOR_ABORT + 1)]
    try:
        run_arm("outage", games, env=ScriptedEnv(), executor=_Failing(ConnectionError("outage")),
                repo=None, max_steps=3, top_k=1, max_error_rate=budget, **SCRIPTED)
        problems.append(f"an arm with every game unmeasured did not abort (budget {budget})")
    except ArmAborted:
        pass
    return Result(check, gates, "FAIL" if problems else "PASS", "eval.max_error_rate", budget,
                  "errored games unmeasured; arm aborts past the budget", incident,
                  "; ".join(problems) or "timeouts, API errors, parse failures and env failures "
                  f"are unmeasured, dropped from pairs and rewards; an outage aborts the arm "
                  f"after {MIN_GAMES_FOR_ABORT} games")


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


# -- gate 3 ----------------------------------------------------------------------------------
@dry_run
@curator_training
def rollout_positions(ctx: Context) -> Result:
    check, gates = "rollout-positions", (3,)
    incident = "rewards measured on 1 of 9 positions while every health metric looked fine"
    if not ctx.training:
        return _eval_rollouts(ctx, check, gates, incident)

    g = ctx.cfg.training.group_size
    pool = _train_pool(ctx)
    rollouts, rewards, short = [], [], 0
    with closing(make_setup(ctx.cfg, pool)) as setup:  # its engine workers, if any, stop after
        for i, group in enumerate(build_groups(pool, g, ROLLOUTS, _seed(ctx), setup.min_group_size,
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


def _eval_rollouts(ctx: Context, check: str, gates: tuple, incident: str) -> Result:

    n = min(EVAL_GAMES, ctx.cfg.env.n_games)
    games = _games(ctx, ctx.cfg.env.split, ctx.cfg.env.n_games)[:n]
    env = environment(ctx.cfg)
    section, model = ctx.cfg.executor, uses_model(ctx.cfg.executor.backend)
    if model:  # a model loads, then acts: minutes on a CPU, said before
        ctx.progress(f"  dry run: {n} real games of up to {ctx.cfg.env.max_steps} actions with "
                     f"{section.backend}:{section.model}; building the executor first (a local model loads "
                     "its weights)")
    executor = env.make_executor(section)
    if model:
        executor = _Paced(executor, ctx.progress, n * ctx.cfg.env.max_steps)
    rows = run_arm("dry-run", games, env=env.make_env(games), executor=executor,
                   repo=None, **arm_settings(ctx.cfg, abort_on_outage=False))
    measured = sum(not r["unmeasured"] for r in rows)
    coerced = sum(r["coerced_actions"] for r in rows)
    steps = sum(r["steps"] for r in rows)
    line = (f"games measured {measured} of {len(rows)}; coercion {coerced} of {steps} actions; "
            f"{sum(bool(r['success']) for r in rows)} won")
    reasons = {r["unmeasured_reason"] for r in rows if r["unmeasured"]}
    return Result(check, gates, "PASS" if measured == len(rows) else "FAIL", "games measured",
                  f"{measured} of {len(rows)}", f"{len(rows)} of {len(rows)}", incident,
                  line + (f"; unmeasured: {sorted(reasons)[0]}" if reasons else ""))


@dry_run
@training_only(3)
@curator_training
def task_distribution(ctx: Context) -> Result:
    check, gates = "task-distribution", (3,)

    t = ctx.cfg.training
    pool = _train_pool(ctx)
    types = {g.task_type for g in pool}
    per_step = math.ceil(groups_per_step(ctx.cfg) or 1)
    k = min(max(2 * len(types), 4), per_step * (t.max_steps or 1))
    incident = "a fixed 10-task loop cost ~64 GPU-days while every health metric looked fine"

    low, high = environment(ctx.cfg).group_sizes(ctx.cfg)
    try:
        # the draws as drawn: a curriculum reorders the same groups, it draws none
        groups = build_groups(pool, t.group_size, k, _seed(ctx), low if low != high else None, grouping=t.grouping,
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


# -- gate 4 ----------------------------------------------------------------------------------
@dry_run
def splits_disjoint(ctx: Context) -> Result:
    check, gates = "splits-disjoint", (4,)
    cfg = ctx.cfg
    incident = "held-out games leaked into training: a benchmark measured on what was learned"
    held_out = _games(ctx, cfg.env.split, cfg.env.n_games)
    train = _train_pool(ctx) if cfg.env.n_train_games else []
    overlap = {g.content_hash for g in held_out} & {g.content_hash for g in train}
    detail = (f"{len(held_out)} {cfg.env.split} and {len(train)} {cfg.env.train_split} games, "
              f"{len(overlap)} shared content hashes")
    if not overlap and ctx.training and trainer_of(cfg).curates:  # a slate trainer: selector-rollouts

        s = arm_settings(cfg)
        setup = Setup({g.id: g for g in train}, _Recording(), ScriptedEnv, cfg.training.group_size, s["max_steps"],
                      s["top_k"], s["retrieval_mode"])
        try:
            CuratorEnv(setup).reset(game_ids=[held_out[0].id] * cfg.training.group_size)
            overlap = {"readable"}
            detail += "; a training rollout could load a held-out game"
        except KeyError:
            detail += "; training rollouts refuse held-out games"
    return Result(check, gates, "FAIL" if overlap else "PASS", "env.split", cfg.env.split,
                  f"disjoint from {cfg.env.train_split}", incident, detail)


# -- gate 7 ----------------------------------------------------------------------------------
@machine  # it plays nothing: `plan` says a missing terabyte before any launch
@training_only(7)
def disk(ctx: Context) -> Result:
    check, gates = "disk", (7,)
    t = ctx.cfg.training
    incident = "a full disk killed a run at its last checkpoint"

    out = training_output_dir(ctx.cfg).expanduser()
    probe = out.absolute()
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free / GIB
    size = t.checkpoint_gb if t.checkpoint_gb is not None else _estimate_gb(t)
    count = math.ceil((t.max_steps or 0) / t.save_steps) if t.save_steps else None
    if size is None or count is None:
        return Result(check, gates, "WARN", "training.checkpoint_gb", None, f"<= {free:.1f} GiB free",
                      incident, "checkpoint size unmeasured: set training.checkpoint_gb")
    need = size * count
    return Result(check, gates, "PASS" if free >= need else "FAIL", "free disk at " + str(probe),
                  f"{free:.1f} GiB", f">= {need:.1f} GiB ({count} checkpoints x {size:g} GiB, all "
                  "kept for sweeps)", incident)


def _estimate_gb(t) -> float | None:
    """bf16 weights plus fp32 Adam state (full fine-tuning), or ~1% of weights (LoRA)."""
    found = re.search(r"(\d+(?:\.\d+)?)\s*[bB]\b", t.model or "")
    if not found:
        return None
    params = float(found.group(1)) * 1e9
    return params * (0.02 if t.lora else 14) / GIB


def _seed(ctx: Context) -> int:
    return ctx.cfg.training.seed if ctx.cfg.training.seed is not None else ctx.cfg.env.seed


# -- SkillGate (issue 17): the selector trainer's slate rollouts --------------------------------
@dry_run
@training_only(2, 3)
def selector_rollouts(ctx: Context) -> Result:
    """Real slate rollouts on the train pool through the tools TRL will publish: reads of the
    oracle and a misleading skill are recorded with their roles (no role where the profile shows
    no oracle: no_skill's empty slate, hybrid_slate's twin), an action steps the real game, the
    episode is measured, and a held-out game is refused."""
    check, gates, cfg = "selector-rollouts", (2, 3), ctx.cfg
    if trainer_of(cfg).curates:
        return Result(check, gates, "SKIP", detail=f"skillgate.trainer {cfg.skillgate.trainer} plays no slates")
    import tempfile

    slate_domain = environment("slate")

    incident = "selector credit computed from reads the environment never recorded"
    tools = published_tools(slate_domain.SlateEnv)
    if tools != ["act", "read_skill"]:
        return Result(check, gates, "FAIL", "tools", tools, ["act", "read_skill"], incident)
    pool = _train_pool(ctx)[:ROLLOUTS]
    with tempfile.TemporaryDirectory() as tmp:
        setup = slate_domain.make_slate_setup(cfg, pool, tmp)
    problems, lines = [], []
    for game in pool:
        env = slate_domain.SlateEnv(setup)
        env.reset(game_id=game.id)
        slate = setup.slates[game.id]
        env.read_skill(slate.oracle)
        env.read_skill(next(iter(slate.misleading + slate.irrelevant + slate.relevant), slate.oracle))
        env.act(slate_domain.admissible(env)[0])
        record = slate_domain.episode_record(env)
        if record["success"] is None:
            problems.append(f"{game.id} unmeasured: {record['unmeasured_reason']}")
        if record["read_roles"][:1] != ["oracle" if env.with_oracle else None] or len(record["reads"]) != 2:
            problems.append(f"{game.id}: reads recorded as {record['read_roles']}")
        lines.append(f"{game.id}: {len(record['slate'])} of {len(slate.order)} skills shown, reads {record['read_roles']}")
    held_out = _games(ctx, cfg.env.split, cfg.env.n_games)[0]
    try:
        slate_domain.SlateEnv(setup).reset(game_id=held_out.id)
        problems.append("a training rollout could load a held-out game")
    except KeyError:
        lines.append("held-out games refused")
    return Result(check, gates, "FAIL" if problems else "PASS", "slate rollouts", len(pool), "measured, reads recorded",
                  incident, "; ".join(problems + lines))


@dry_run
def eval_pins(ctx: Context) -> Result:
    """A frozen eval spec must match what this config would play: one pin that differs (task
    set, repeats, seed, prompt or tool-schema hash, skill snapshot) refuses the run."""
    check, gates, spec = "eval-pins", (4,), ctx.cfg.skillgate.eval_spec
    if not spec or not ctx.cfg.skillgate.slate_repo:
        return Result(check, gates, "SKIP", detail="no frozen eval spec with a slate (skillgate.eval_spec)")

    frozen = load_spec(ctx.path(spec)).pins()
    pins = config_pins(ctx.cfg, _games(ctx, ctx.cfg.env.split, ctx.cfg.env.n_games))
    differ = [k for k in PINS if frozen[k] != pins[k]]
    return Result(check, gates, "FAIL" if differ else "PASS", "skillgate.eval_spec", spec, "every pin equal",
                  "rows played under different protocols compared as if they were one",
                  "; ".join(f"{k}: spec {frozen[k]} vs this config {pins[k]}" for k in differ)
                  or "task set, repeats, seed, prompt, tool schema and snapshot as frozen")
