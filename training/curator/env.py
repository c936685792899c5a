"""The curator environment of SkillOS Algorithm 1, in the form TRL's `environment_factory` takes.

One rollout = one group of |G| same-type tasks and its own empty skill repo. `reset(**row)`
plays position 1 with the empty repo and returns the first curator input; each
`curate_and_advance(operations)` applies the curator's operations to the repo, plays the next
position with top-k retrieval from the updated repo, and returns the next input. Positions the
curator never reaches are played by `finish()` with the repo frozen, so quitting early cannot
raise the reward. A position whose game or executor fails is unmeasured (None), never a loss.

TRL publishes every public method of an environment as a tool, so the only public methods are
`reset` and `curate_and_advance`; everything else is private or a module function. Positions
play through the same `skillos.evals.runner.play` as evaluation: one executor path, one
retrieval path, in training and in eval.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field

from skillos.errors import SkillosError
from skillos.evals.curation import Capacity, apply_op, curator_input, ops_from_tool_calls
from skillos.evals.runner import play
from skillos.repo import Retriever, SkillRepo
from skillos.training.curator import plays
from skillos.training.curator.reward import Rollout
from skillos.training.curator.rollouts import MeteredExecutor, together
from skillos.evals.arms import arm_settings
from skillos.evals.envs.registry import environment
from skillos.evals.envs.scripted import ScriptedEnv
from skillos.registry import ENVIRONMENTS, load


@dataclass
class Setup:
    """What every rollout of a training run shares."""

    games: dict  # game id -> Game (train split only)
    executor: object
    make_env: object  # () -> a fresh game env (one per rollout: rollouts may run concurrently)
    group_size: int
    max_steps: int  # max_steps, top_k, retrieval_mode: the config's (evals.arms.arm_settings), no second default
    top_k: int
    retrieval_mode: str
    min_group_size: int | None = None  # groups of min_group_size..group_size tasks (reasoning: 5-12)
    history_length: int | None = None  # curator.history_length: trajectory steps the curator reads (None: 30)
    # a play kept for the same game, executor and repo is handed back (training/curator/plays.py): an
    # environment whose game files decide its plays, with a deterministic executor
    keep_plays: bool = False
    engine_pool: object = None  # the engine worker processes make_env's games run in (None: this process)
    capacity: Capacity | None = None  # training.max_instructions: what a rollout's repo may tell the executor

    def close(self) -> None:
        """Stop the engine workers, if any (idempotent; interpreter exit stops them too)."""
        if self.engine_pool is not None:
            self.engine_pool.close()


@dataclass
class RolloutState:
    """One rollout's record as it is played: what the reward is computed from."""

    game_ids: list
    task_type: str
    repo: SkillRepo = field(default_factory=lambda: SkillRepo(None))
    positions: list = field(default_factory=list)  # True / False / None per played position
    retrieved: list = field(default_factory=list)  # per played position, the skill names the executor got, in order
    ops_valid: int = 0
    ops_total: int = 0
    contents: list = field(default_factory=list)  # inserted/updated skill texts, for the judge
    input_words: int = 0
    coerced_actions: int = 0
    calls: int = 0
    # the call that played the group's last position (calls then): a turn TRL generates after its
    # answer can change nothing (training/curator/masks.py leaves it out of the loss)
    last_call: int | None = None


class CuratorEnv:
    """Algorithm 1, one rollout at a time. Build with `functools.partial(CuratorEnv, setup)`."""

    def __init__(self, setup: Setup):
        self._setup = setup
        self._env = setup.make_env()
        self._state: RolloutState | None = None
        # One rollout's state changes one at a time: a rollout's finishing plays may start ahead of
        # the reward (training/curator/pipeline.py) while TRL makes a call no worker foresaw; without it
        # both saw a position left and played it (4 positions of 3, measured).
        self._lock = threading.RLock()

    @together  # TRL resets one rollout at a time; under training/curator/rollouts.py a step's resets run at once
    def reset(self, **row) -> str:
        ids = list(row["game_ids"])
        low, high = self._setup.min_group_size or self._setup.group_size, self._setup.group_size
        if not low <= len(ids) <= high:
            expected = high if low == high else f"{low}-{high}"
            raise ValueError(f"row has {len(ids)} games; training.group_size is {expected}")
        unknown = [g for g in ids if g not in self._setup.games]
        if unknown:  # the held-out split is never in Setup.games: a row naming it stops here
            raise KeyError(f"game {unknown[0]!r} is not in the training pool")
        self._state = RolloutState(ids, row.get("task_type", ""))
        return self._advance()

    @together
    def curate_and_advance(self, operations: list[dict]) -> str:
        """Edit the skill repo, then let the executor play the next task with the updated repo.

        Args:
            operations: Skill edits to apply in order; an empty list advances without editing.
                Each is {"op": "insert" | "update" | "delete", "skill_name": str,
                "content": str (insert), "new_name": str (update, optional),
                "new_content": str (update)}. Content is SKILL.md text (frontmatter with a
                description) or plain markdown whose first line is the description.

        Returns:
            The result of each operation, then the next task, the skills the executor
            retrieved, its trajectory and whether it succeeded.
        """
        with self._lock:
            state = self._state
            if state is None:
                return "error: no rollout in progress (reset was not called)"
            state.calls += 1
            if len(state.positions) >= len(state.game_ids):
                return "The rollout is over: every task has been played."
            # the eval path's normalisation: a non-list becomes one refused operation, and edits past
            # MAX_OPS_PER_CALL are refused (counted in ops_total), not applied
            ops = ops_from_tool_calls([{"name": "curate_and_advance", "arguments": {"operations": operations}}])
            results = [_apply(state, op, self._setup.capacity) for op in ops]
            text = self._advance()
            if len(state.positions) == len(state.game_ids):
                state.last_call = state.calls
            return "\n".join(["Operations:"] + (results or ["(none)"]) + ["", text])

    # -- not tools ---------------------------------------------------------------------------
    def _advance(self) -> str:
        state = self._state
        game, s = self._setup.games[state.game_ids[len(state.positions)]], self._setup
        # a deterministic executor's play of this game with this repo is kept (training/curator/plays.py)
        def played():
            return play(self._env, s.executor, Retriever(state.repo, s.retrieval_mode), game, s.max_steps, s.top_k)

        traj = plays.play(played, game, s.executor, state.repo, s.retrieval_mode, s.max_steps, s.top_k) \
            if s.keep_plays else played()
        state.positions.append(traj.won)
        state.retrieved.append(list(traj.retrieved))
        state.coerced_actions += traj.coerced
        text = curator_input(traj, len(state.positions), len(state.game_ids), s.history_length)
        state.input_words += len(text.split())
        return text


def make_setup(cfg, games, gauge=None) -> Setup:
    """The rollout setup of a config: its environment's executor and the train games it may draw
    from; with `gauge` (a rollouts.InFlight), every executor request is counted while in flight.
    `env.engine_workers`: None or 0 plays every rollout's games in this process (one engine call at
    a time, evals.runner.ENGINE_LOCK); N >= 1 runs them in a pool of N engine worker processes
    (evals/envs/alfworld/pool.py), which `Setup.close()` stops."""

    env, settings = environment(cfg), arm_settings(cfg)
    games = list(games)
    low, high = env.group_sizes(cfg)
    executor = env.make_executor(cfg.executor)
    bound = capacity(cfg, env)  # before the engine workers start: a bound refused here leaks none
    pool = engine_pool(cfg.env.name, cfg.env.engine_workers)
    return Setup({g.id: g for g in games}, MeteredExecutor(executor, gauge) if gauge else executor,
                 pool.make_env if pool is not None else lambda: env.make_env(games), high, settings["max_steps"],
                 settings["top_k"], settings["retrieval_mode"], low if low != high else None,
                 cfg.curator.history_length, getattr(env, "replayable", False) and plays.deterministic(executor),
                 pool, bound)


def capacity(cfg, env) -> Capacity | None:
    """training.max_instructions as the rollouts apply it: counted by the environment's reader."""
    most = cfg.training.max_instructions
    if most is None:
        return None
    if not callable(getattr(env, "instructs", None)):
        raise SkillosError(f"training.max_instructions: env {env.name} cannot say what a skill tells its executor "
                           "(its environment has no instructs); unset it")
    return Capacity(most, env.instructs, "training.max_instructions")


def refuses_game(cfg, train, game, executor) -> bool:
    """Whether a training rollout of `cfg`, its games drawn from `train`, refuses `game` (a held-out
    one: gate 4's splits-disjoint asks, skillos.registry's Trainer.held_out_probe). The rollout's
    env is scripted and `executor` plays it, so a rollout that loads the game answers at once."""
    settings = arm_settings(cfg)
    setup = Setup({g.id: g for g in train}, executor, ScriptedEnv, cfg.training.group_size, settings["max_steps"],
                  settings["top_k"], settings["retrieval_mode"])
    try:
        CuratorEnv(setup).reset(game_ids=[game.id] * cfg.training.group_size)
    except KeyError:
        return True
    return False


def engine_pool(env_name: str, engine_workers: int | None):
    """A pool of `engine_workers` engine processes for an environment's games (its registry
    entry's `engine_pool`, e.g. evals/envs/alfworld/pool.py), or None for None/0 (the games run
    in this process). The config refuses workers for an environment that has no pool."""
    if not engine_workers:
        return None

    return load(ENVIRONMENTS[env_name].engine_pool)(engine_workers)


def state_of(env: CuratorEnv) -> RolloutState | None:
    """The rollout `env` is playing (None before its reset). A function, not a public member: the
    environment's public methods are the curator's tools (TRL), so its state stays private."""
    return env._state


def env_with_state(state: RolloutState) -> CuratorEnv:
    """An environment holding a rollout already played, without a setup or a game: what the
    gates' reward probe scores."""
    env = CuratorEnv.__new__(CuratorEnv)
    env._state = state
    return env


def finish(env: CuratorEnv) -> Rollout:
    """Play every position the curator did not reach, with the repo frozen; the rollout's record.

    A rollout that stops before its last position stopped on a curator turn with no parseable
    call to curate_and_advance (TRL ends the loop on a turn without a tool call, and a call it
    could not parse or run never reached the environment): that turn is one measured invalid
    operation, so r_fc counts it as 0, never as a missing value. Only an outage is unmeasured."""
    with getattr(env, "_lock", None) or contextlib.nullcontext():  # a probe's env (env_with_state) has none
        state = env._state
        if state is None:
            raise ValueError("no rollout in progress")
        if len(state.positions) < len(state.game_ids):
            state.ops_total += 1  # the turn with no parseable call: invalid, and measured
        while len(state.positions) < len(state.game_ids):
            env._advance()
    words = sum(len(s.text.split()) for s in state.repo.skills)
    return Rollout(list(state.positions), state.ops_valid, state.ops_total, [], words,
                   state.input_words, state.coerced_actions)


def _apply(state: RolloutState, op, capacity: Capacity | None = None) -> str:
    state.ops_total += 1
    applied = apply_op(state.repo, op, capacity)
    state.ops_valid += applied.ok
    if applied.content is not None:
        state.contents.append(applied.content)
    return applied.line
