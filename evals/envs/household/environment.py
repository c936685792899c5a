"""The household environment (ALFWorld) behind the environment protocol (envs/registry.py): the
games and engine of envs/alfworld/, the heuristic executor and curator of heuristic/ beside this
file, and for a model backend the LLM executor and curator (evals/backends/build.py)."""

from __future__ import annotations

import os
from pathlib import Path

from skillos.evals.backends import build
from skillos.errors import SkillosError
from skillos.evals.curation import CURATOR_SYSTEM
from skillos.evals.envs.alfworld import games, scenes
from skillos.evals.envs.alfworld.env import AlfworldEnv
from skillos.evals.envs.household.heuristic import HeuristicCurator, HeuristicExecutor
from skillos.evals.envs.household.heuristic.reading import procedures
from skillos.evals.envs.household.llm import LLMExecutor


class Household:
    name = "household"
    reference = "skillos-paper/alfworld"
    max_steps = 30  # the paper's turn limit
    history_unused = None  # LLMExecutor shows the last executor.history_length action/observation pairs
    replayable = True  # the real ALFWorld engine: a game's file decides its play (training/curator/plays.py may keep it)

    @property
    def curator_system(self) -> str:
        return CURATOR_SYSTEM

    def instructs(self, skill) -> frozenset:
        """The procedures a skill tells the executor how to do (training.max_instructions counts them)."""
        return procedures(skill)

    def data_missing(self, cfg, split: str) -> str | None:
        if cfg.env.data != "official":
            return None  # generated games are made here
        if not os.environ.get("ALFWORLD_DATA"):
            return ("env.data is 'official' but ALFWORLD_DATA is not set: download the data with "
                    "`alfworld-download` (from the alfworld package; ~2 GB into ~/.cache/alfworld) and export "
                    "ALFWORLD_DATA=~/.cache/alfworld")
        folder = Path(os.environ["ALFWORLD_DATA"]) / "json_2.1.1" / split
        return None if folder.is_dir() else f"ALFWORLD_DATA has no {folder}; expected the official json_2.1.1 layout"

    def load_tasks(self, cfg, split: str, n: int, progress=None):
        missing = self.data_missing(cfg, split)
        if missing:
            raise SkillosError(missing)
        scenes.alfworld_root()  # a missing engine is a one-line error before anything starts
        if cfg.env.data == "official":
            types = games.task_types(cfg.env.task_types)
            found = [g for g in games.load_official(os.environ["ALFWORLD_DATA"], split) if g.task_type in types]
            if len(found) < n:
                raise SkillosError(f"ALFWORLD_DATA {split} has {len(found)} playable games; asked for {n}")
            return found[:n]
        return games.make_games(split, n, cfg.env.seed, progress=progress, types=cfg.env.task_types)

    def make_env(self, tasks=()):
        return AlfworldEnv(fast=True)

    @property
    def model_executor(self) -> type:
        return LLMExecutor

    def make_executor(self, config):
        return build.executor(config, HeuristicExecutor, self.model_executor)

    def make_curator(self, config, horizon: int | None = None):
        return build.curator(config, HeuristicCurator, horizon, self.curator_system)

    def describe(self, cfg, split: str) -> str:
        return f"ALFWorld {split} ({cfg.env.data})"

    def turns(self, cfg) -> int:
        return cfg.env.max_steps

    def group_sizes(self, cfg) -> tuple[int, int]:
        g = cfg.training.group_size
        return g, g


HOUSEHOLD = Household()
