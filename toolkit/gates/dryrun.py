"""Dry-run checks: they execute the code a launch will run, on scripted and on real rollouts.

Scripted ones drive the real runner, reward and curator environment with a stand-in game or a
failing executor (the thing under test is the toolkit's own code path). Real ones play a few
ALFWorld games with the configured executor, sample the task groups the data pipeline will
yield, and hash the splits (the disk check, which plays nothing, is a machine check: `plan` runs it).
"""

from __future__ import annotations

import math
import re
import shutil
import threading
import time

from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
from skillos.checking import ROLLOUT_INCIDENT, Context, Result, dry_run, games, machine, train_pool, training_only
from skillos.registry import load, trainer_of, uses_model
from skillos.safety import Ticker
from skillos.config.derived import training_output_dir
from skillos.evals import stats
from skillos.evals import arms  # its functions read at each call: the launch's own path, as it is now
from skillos.evals.envs.registry import environment, rollout_environment
from skillos.evals.protocol import PINS, load_spec
from skillos.evals.runner import ArmAborted, MIN_GAMES_FOR_ABORT, play, run_arm
from skillos.evals.slate_eval import config_pins
from skillos.repo import Retriever, SkillRepo
from skillos.training.curator.reward import Reward, group_rewards, task_reward

GIB = 1024 ** 3
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


# -- gate 1 ----------------------------------------------------------------------------------
@dry_run
def top_k_used(ctx: Context) -> Result:
    """The number of skills the executor actually receives, through the launch's own path."""

    unused = getattr(rollout_environment(ctx.cfg), "retrieval_unused", None) if ctx.training else None
    if unused:
        return Result("top-k-used", (1,), "SKIP", detail=f"skillgate.trainer {ctx.cfg.skillgate.trainer}: {unused}")
    settings = arms.arm_settings(ctx.cfg)
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


# -- gate 3 ----------------------------------------------------------------------------------


@dry_run
def rollout_positions(ctx: Context) -> Result | list:
    """An eval's real rollouts, every game measured; a training config's rollouts are its method's
    own check (the curator's rollout-positions, the selector's selector-rollouts)."""
    if ctx.training:
        return []
    return _eval_rollouts(ctx, "rollout-positions", (3,), ROLLOUT_INCIDENT)


def _eval_rollouts(ctx: Context, check: str, gates: tuple, incident: str) -> Result:
    n = min(EVAL_GAMES, ctx.cfg.env.n_games)
    played = games(ctx, ctx.cfg.env.split, ctx.cfg.env.n_games)[:n]
    env = environment(ctx.cfg)
    section, model = ctx.cfg.executor, uses_model(ctx.cfg.executor.backend)
    if model:  # a model loads, then acts: minutes on a CPU, said before
        ctx.progress(f"  dry run: {n} real games of up to {ctx.cfg.env.max_steps} actions with "
                     f"{section.backend}:{section.model}; building the executor first (a local model loads "
                     "its weights)")
    executor = env.make_executor(section)
    if model:
        executor = _Paced(executor, ctx.progress, n * ctx.cfg.env.max_steps)
    rows = run_arm("dry-run", played, env=env.make_env(played), executor=executor,
                   repo=None, **arms.arm_settings(ctx.cfg, abort_on_outage=False))
    measured = sum(not r["unmeasured"] for r in rows)
    coerced = sum(r["coerced_actions"] for r in rows)
    steps = sum(r["steps"] for r in rows)
    line = (f"games measured {measured} of {len(rows)}; coercion {coerced} of {steps} actions; "
            f"{sum(bool(r['success']) for r in rows)} won")
    reasons = {r["unmeasured_reason"] for r in rows if r["unmeasured"]}
    return Result(check, gates, "PASS" if measured == len(rows) else "FAIL", "games measured",
                  f"{measured} of {len(rows)}", f"{len(rows)} of {len(rows)}", incident,
                  line + (f"; unmeasured: {sorted(reasons)[0]}" if reasons else ""))


# -- gate 4 ----------------------------------------------------------------------------------
@dry_run
def splits_disjoint(ctx: Context) -> Result:
    check, gates = "splits-disjoint", (4,)
    cfg = ctx.cfg
    incident = "held-out games leaked into training: a benchmark measured on what was learned"
    held_out = games(ctx, cfg.env.split, cfg.env.n_games)
    train = train_pool(ctx) if cfg.env.n_train_games else []
    overlap = {g.content_hash for g in held_out} & {g.content_hash for g in train}
    detail = (f"{len(held_out)} {cfg.env.split} and {len(train)} {cfg.env.train_split} games, "
              f"{len(overlap)} shared content hashes")
    probe = trainer_of(cfg).held_out_probe  # where None, its method's own checks play its rollouts (selector-rollouts)
    if not overlap and ctx.training and probe:
        if load(probe)(cfg, train, held_out[0], _Recording()):
            detail += "; training rollouts refuse held-out games"
        else:
            overlap = {"readable"}
            detail += "; a training rollout could load a held-out game"
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


# -- SkillGate's frozen eval protocol ------------------------------------------------------------
@dry_run
def eval_pins(ctx: Context) -> Result:
    """A frozen eval spec must match what this config would play: one pin that differs (task
    set, repeats, seed, prompt or tool-schema hash, skill snapshot) refuses the run."""
    check, gates, spec = "eval-pins", (4,), ctx.cfg.skillgate.eval_spec
    if not spec or not ctx.cfg.skillgate.slate_repo:
        return Result(check, gates, "SKIP", detail="no frozen eval spec with a slate (skillgate.eval_spec)")

    frozen = load_spec(ctx.path(spec)).pins()
    pins = config_pins(ctx.cfg, games(ctx, ctx.cfg.env.split, ctx.cfg.env.n_games))
    differ = [k for k in PINS if frozen[k] != pins[k]]
    return Result(check, gates, "FAIL" if differ else "PASS", "skillgate.eval_spec", spec, "every pin equal",
                  "rows played under different protocols compared as if they were one",
                  "; ".join(f"{k}: spec {frozen[k]} vs this config {pins[k]}" for k in differ)
                  or "task set, repeats, seed, prompt, tool schema and snapshot as frozen")
