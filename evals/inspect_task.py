"""An inspect_ai task that plays skillos's ALFWorld games with a skill repo through inspect's own
`skill()` tool, scored as skillos scores a game: won within the step limit, on the real engine.

    inspect eval skillos/alfworld_skills -T skills=path/to/repo -T n_games=6 --model openai/...

(the package registers the task with inspect through its `inspect_ai` entry point; `inspect eval
$(python -c "import skillos.evals.inspect_task as t; print(t.__file__)")` works too). A sample is
one generated held-out game (the same games, by content, as `skillos eval` plays for the same
env settings); the model sees the task and the first observation, may call `skill(name)` for any
skill of the repo (each folder holding a SKILL.md), and acts with `act(command)`, one of the
admissible commands; a command that is not admissible is refused and counted as a step, as
skillos's runner counts a coerced action. A game whose engine fails is a sample error (inspect
leaves it unscored), never a loss. Needs the inspect extra (pip install 'skillos[inspect]').
"""

from __future__ import annotations

import uuid
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolError, skill, tool
from inspect_ai.util import store
from skillos.config.loading import validate, with_sets
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos.evals.envs.registry import environment

_ENVS: dict = {}  # a sample's live game, by the key its store holds (an engine is not serialisable)
NUDGE = "Call act(command) with one of the admissible commands, or skill(name) to read a skill."


def _observation(obs, steps: int, max_steps: int) -> str:
    return (f"{obs.text}\n\nStep {steps} of {max_steps}. Admissible commands: {', '.join(obs.admissible)}"
            + ("\nThe task is done: you won." if obs.won else ""))


def settings(**given) -> object:
    """The env section these task arguments make: the config's defaults (env.split, env.seed,
    env.max_steps), with what was given (None: the default)."""

    sets = [f"env.{key}={value}" for key, value in given.items() if value is not None]
    return with_sets(validate(Config()), sets)


def games(n_games: int, split: str | None = None, seed: int | None = None):
    """The held-out games skillos plays for these settings (generated offline and cached)."""
    cfg = settings(n_games=n_games, split=split, seed=seed)
    return environment(cfg).load_tasks(cfg, cfg.env.split, n_games)


def skill_folders(skills: str | None) -> list[Path]:
    """The skills of a repo folder (each subfolder with a SKILL.md), or none."""
    if not skills:
        return []
    root = Path(skills)
    if not root.is_dir():
        raise SkillosError(f"-T skills={skills}: not a folder of skills (NAME/SKILL.md)")
    return sorted(p.parent for p in root.glob("*/SKILL.md"))


@tool
def act():
    async def execute(command: str) -> str:
        """Take one action in the household game.

        Args:
            command: One of the admissible commands listed in the last observation.
        """
        game = _ENVS[store().get("skillos_game")]
        if store().get("won"):
            raise ToolError("The game is already won; nothing more to do.")
        if store().get("steps", 0) >= game["max_steps"]:  # several calls in one turn cannot pass the limit
            raise ToolError(f"The step limit ({game['max_steps']}) is spent; the game is over.")
        steps = store().get("steps", 0) + 1
        store().set("steps", steps)
        if command not in game["admissible"]:
            raise ToolError(f"{command!r} is not admissible now (step {steps} of {game['max_steps']} spent). "
                            f"Admissible: {', '.join(game['admissible'])}")
        obs = game["env"].step(command)
        game["admissible"] = list(obs.admissible)
        store().set("won", bool(obs.won))  # a win ends the game: no later call is played (above)
        return _observation(obs, steps, game["max_steps"])

    return execute


@solver
def play(max_steps: int, skills: list):
    """The game loop: the model calls tools one round at a time until it wins, spends its
    steps, or uses twice its steps in turns (a model that never acts)."""
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        env = environment("household").make_env()
        env.load(state.metadata["path"])
        obs = env.reset()
        key = uuid.uuid4().hex
        _ENVS[key] = {"env": env, "admissible": list(obs.admissible), "max_steps": max_steps}
        state.store.set("skillos_game", key)
        state.store.set("won", False)
        state.store.set("steps", 0)
        state.tools = ([skill(skills)] if skills else []) + [act()]  # installed into the task's local sandbox
        state.messages.append(ChatMessageUser(content=_observation(obs, 0, max_steps)))
        try:
            for _ in range(2 * max_steps):
                state = await generate(state, tool_calls="single")
                if state.store.get("won") or state.store.get("steps") >= max_steps:
                    break
                if not state.output.message.tool_calls:
                    state.messages.append(ChatMessageUser(content=NUDGE))
        finally:
            _ENVS.pop(key, None)
        return state

    return solve


@scorer(metrics=[accuracy(), stderr()])
def won():
    """skillos's success: the game won within the step limit."""
    async def score(state: TaskState, target: Target) -> Score:
        win = bool(state.store.get("won"))
        return Score(value=CORRECT if win else INCORRECT, answer="won" if win else "lost",
                     explanation=f"{state.store.get('steps')} steps of {state.metadata['max_steps']}")

    return score


@task
def alfworld_skills(skills: str | None = None, n_games: int = 6, split: str | None = None, seed: int | None = None,
                    max_steps: int | None = None) -> Task:
    """skillos's held-out ALFWorld games, played with the skills of `skills` (a folder of
    NAME/SKILL.md) through inspect's skill() tool, scored as skillos scores a game; `split`,
    `seed` and `max_steps` default to the config's env section."""
    folders = skill_folders(skills)
    env = settings(split=split, seed=seed, max_steps=max_steps).env
    split, seed, max_steps = env.split, env.seed, env.max_steps
    samples = [Sample(id=g.id, input=f"Your task: {g.task}", target="won",
                      metadata={"path": g.path, "task_type": g.task_type, "content_hash": g.content_hash,
                                "max_steps": max_steps, "skills": [p.name for p in folders]})
               for g in games(n_games, split, seed)]
    return Task(dataset=MemoryDataset(samples, name=f"skillos-alfworld-{split}"), solver=play(max_steps, folders),
                scorer=won(), sandbox="local")
