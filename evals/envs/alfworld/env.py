"""Play an ALFWorld game through the same TextWorld PDDL environment ALFWorld's own
`AlfredTWEnv` uses: `PddlEnv` wrapped in `AlfredDemangler` and `AlfredInfos`, asked for `won`
and the admissible commands."""

from __future__ import annotations

import json
from pathlib import Path

from skillos.evals.envs.alfworld import engine, planner
from skillos.evals.envs.registry import Observation


class AlfworldEnv:
    """One game at a time: `load(path)`, `reset()`, `step(command)`.

    fast=True installs the memoized engine paths (engine.py); the observations and admissible
    commands are byte-identical to the stock engine's. Every game an env loads runs on the one
    planner library copy it took at its first (planner.py: a copy per game would hold 34 MB of
    disk each until the process exits); `close()` or collection gives the copy back.
    """

    def __init__(self, fast: bool = True):
        if fast:
            engine.enable()
        self._env = None
        self.task = ""
        self._planner = planner.Holder(self)

    def load(self, game_file: str | Path) -> None:
        data = json.loads(Path(game_file).read_text())
        self._load(data if fill_task(data, game_file) else str(game_file))

    def _load(self, game) -> None:
        """Load a game (a path, or its parsed JSON) on this env's library copy."""
        import textworld
        from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos

        self._env = None  # a failed load leaves no game (the copy may hold half of one)
        infos = textworld.EnvInfos(won=True, admissible_commands=True, extras=["gamefile"])
        env = AlfredInfos(AlfredDemangler(planner.pddl_env(infos, self._planner.lib())))
        env.load(game)
        self._env = env

    def close(self) -> None:
        """End the game and give the library copy back (the next load takes one again)."""
        self._env = None
        self._planner.release()

    def _observe(self, state) -> Observation:
        return Observation(state.feedback, tuple(state["admissible_commands"]), bool(state["won"]))

    def reset(self) -> Observation:
        state = self._env.reset()
        obs = self._observe(state)
        self.task = obs.text.rsplit("Your task is to: ", 1)[-1].strip().rstrip(".")
        return obs

    def step(self, command: str) -> Observation:
        state, _, _ = self._env.step(command)
        return self._observe(state)

    def entity_names(self) -> dict[str, str]:
        """PDDL entity id (lowercased by fast-downward) -> the name players see ('apple 1')."""
        return {key: info.name for key, info in self._env._entity_infos.items()}


def fill_task(data: dict, game_file: str | Path) -> bool:
    """Official games may leave the task to the loader: fill a game file's parsed JSON from its
    traj_data as ALFWorld's add_task_to_grammar does (first template: deterministic). Whether it
    had to (the in-process engine then loads the filled data, else the file itself)."""
    if "UNKNOWN GOAL" not in data["grammar"]:
        return False
    data["grammar"] = data["grammar"].replace("UNKNOWN GOAL", _official_task(Path(game_file)))
    return True


def _official_task(game_file: Path) -> str:
    from alfworld.gen import goal_library

    traj = json.loads((game_file.parent / "traj_data.json").read_text())
    params = traj["pddl_params"]
    template = goal_library.gdict[traj["task_type"]]["templates"][0]
    return template.format(obj=params["object_target"].lower(), recep=params["parent_target"].lower(),
                           toggle=params["toggle_target"].lower(), mrecep=params["mrecep_target"].lower())
