"""Environments by `env.name`: the `Environment` protocol every one implements, and the lookup.

An environment lives in its own folder, evals/envs/<name>/: `environment.py` holds the object
that ENVIRONMENTS (skillos/registry.py, beside the backends and trainers) names, and beside it
the executors and curators that know its text (its heuristic and its model executor: the
household's is envs/household/llm.py; build.executor has no default). Model backends are built for it by
evals/backends/build.py, so a new backend needs nothing here and a new environment is one folder
(listed in pyproject's `packages`) plus one entry of ENVIRONMENTS, never an `if env.name == ...` in
the callers. A free-text environment (observations with no admissible commands, as reasoning's)
brings its own model executor: the household's LLMExecutor asks for one of the admissible commands.

Entries are imported on first use, so naming one never loads another's engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Sequence

from skillos.errors import SkillosError
from skillos.registry import ENVIRONMENTS, load, trainer_of

if TYPE_CHECKING:
    from skillos.evals.curator import Curator
    from skillos.evals.executor import Executor


@dataclass(frozen=True)
class Observation:
    """What a game env's `reset()` and `step(action)` return, in every environment."""

    text: str
    admissible: tuple  # the commands it accepts now; empty where the answer is free text (reasoning)
    won: bool
    grading_timeout: bool = False  # a free-text answer whose grading passed its time bound: wrong, counted
    unread_answer: bool = False  # a free-text reply from which no final answer could be read: wrong, counted


class Environment(Protocol):
    """What the runner, the eval, training, the sweeps and the gates use of an environment."""

    name: str  # its env.name
    # What a config made for another environment takes when a cross-domain sweep retargets it
    # here: its reference table (gates) and its turn limit.
    reference: str
    max_steps: int
    # Why its model executor shows no action/observation history (executor.history_length does
    # nothing here: the gates' trace says so), or None when it shows the last history_length pairs.
    history_unused: str | None

    @property
    def curator_system(self) -> str:
        """The curator's instructions for this domain (eval and training)."""

    def load_tasks(self, cfg, split: str, n: int, progress=None) -> Sequence:
        """The tasks of a split, each with `id`, `path`, `task`, `task_type` and `content_hash`
        (the runner plays them; the eval checks hashes for train/held-out overlap); a missing
        data file is a one-line SkillosError."""

    def data_missing(self, cfg, split: str) -> str | None:
        """What a split's tasks need that is not on this machine (a data folder, a grading
        package), in one line; None: all present. Loads no task: the gates ask it before any
        dry-run, so `gate check` and `plan` say it for free."""

    def make_env(self, tasks=()):
        """A fresh game env (`load(path)`, `reset()`, `step(action)`, `task`) that can play those
        tasks; one per game in flight. An observation with no admissible commands takes free
        text (a reasoning answer), so nothing is coerced."""

    @property
    def model_executor(self) -> type:
        """The class its model backends play as the executor (the gates ask it which
        executor.decoding values it plays, before a game is loaded: build.decodings)."""

    def make_executor(self, config) -> "Executor":
        """The executor of a config section (`executor`), for this domain: its heuristic knows
        the domain's text, a model backend gets its prompts (evals/backends/build.py)."""

    def make_curator(self, config, horizon: int | None = None) -> "Curator":
        """The curator of a config section; `horizon` is the |G| a trained curator saw."""

    def group_sizes(self, cfg) -> tuple[int, int]:
        """(smallest, largest) |G| of a curator-training group."""

    def describe(self, cfg, split: str) -> str:
        """Where a split's tasks come from, for the report."""

    def turns(self, cfg) -> int:
        """The executor turns one task may take (household: env.max_steps; reasoning: 1)."""

    # Optional: `instructs(skill) -> frozenset`, the procedures a skill tells its executor how to
    # do, read as its executor reads them; an environment without it cannot bound a training
    # repo by training.max_instructions (a one-line error when a config sets it).


def environment(name_or_cfg) -> Environment:
    """The environment of a name or of a config (its env.name)."""
    name = getattr(getattr(name_or_cfg, "env", None), "name", name_or_cfg)
    if name not in ENVIRONMENTS:
        raise SkillosError(f"env.name {name!r} is not an environment; use one of {', '.join(ENVIRONMENTS.names())}")
    return load(ENVIRONMENTS[name].target)


def rollout_environment(cfg) -> Environment:
    """The environment a config's training rollouts play: its trainer's `rollout_env` (the
    selector's: the slate), else env.name's."""
    return environment(trainer_of(cfg).rollout_env or cfg.env.name)
