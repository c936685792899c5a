"""Game pools: seeded, verified, cached on disk, split by floor plan.

Splits: `train`, `valid_seen` and `valid_unseen`. `valid_unseen` uses floor plans that `train`
never uses (a fixed 20% of each room type, chosen by hash); `train` and `valid_seen` share floor
plans but draw games from separate seed streams. Every game is identified by a content hash
(its PDDL problem and task sentence); a pool's manifest records them, and an eval refuses to run
when a held-out game's hash is also in its train pool (skillos.evals.experiment).

Game i of a split depends only on (seed, split, i), so the first k games of a pool of n are the
games of a pool of k. Pools are cached under `cache_dir/<version>/<split>-seed<S>-n<N>/`,
written to a temporary folder and renamed into place, so a cache is complete or absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from skillos.evals.envs.alfworld import engine, generator, scenes
from skillos.evals.envs.alfworld.env import AlfworldEnv
from skillos.config.env import SPLITS  # ALFWorld's split names, which every environment's games use
from skillos.errors import SkillosError

UNSEEN_SHARE = 0.2
MAX_ATTEMPTS = 50


@dataclass(frozen=True)
class Game:
    id: str
    path: str  # the game.tw-pddl file
    task_type: str
    task: str
    plan: int
    content_hash: str
    oracle_steps: int


def _seed(*parts) -> int:
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "big")


def unseen_plans() -> set[int]:
    """A fixed 20% of each room type's floor plans, never used by train or valid_seen."""
    chosen = set()
    for plans in scenes.ROOM_OF_PLAN:
        ranked = sorted(plans, key=lambda p: _seed("skillos-unseen-plans", p))
        chosen.update(ranked[: round(len(ranked) * UNSEEN_SHARE)])
    return chosen


def split_plans(split: str) -> list[int]:
    if split not in SPLITS:
        raise SkillosError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    unseen = unseen_plans()
    return sorted(p for p in scenes.all_plans() if (p in unseen) == (split == "valid_unseen"))


def oracle_commands(spec: generator.GameSpec, names: dict[str, str]) -> list[str]:
    """The generator's plan as commands, tracking where the agent stands and what is open."""
    scene = scenes.load_scene(spec.plan)

    def name(raw_id):
        return names[generator.pddl_name(raw_id).lower()]

    here, opened, commands = None, set(), []
    openable = scenes.constants().OPENABLE_CLASS_SET
    for step in spec.oracle:
        verb, *args = step
        if verb == "goto":
            location = scene.receptacles[args[0]]
            if location != here:
                commands.append(f"go to {name(args[0])}")
                here = location
        elif verb == "open":
            if scenes.receptacle_type(args[0]) in openable and args[0] not in opened:
                commands.append(f"open {name(args[0])}")
                opened.add(args[0])
        elif verb == "take":
            commands.append(f"take {name(args[0])} from {name(args[1])}")
        elif verb == "move":
            commands.append(f"move {name(args[0])} to {name(args[1])}")
        elif verb == "use":
            commands.append(f"use {name(args[0])}")
        else:  # clean / heat / cool
            commands.append(f"{verb} {name(args[0])} with {name(args[1])}")
    return commands


def verify(spec: generator.GameSpec, env: AlfworldEnv, folder: Path) -> list[str] | None:
    """Write the game, replay the oracle in the real engine; the walkthrough if it won."""
    path = folder / "game.tw-pddl"
    path.write_text(json.dumps(generator.game_json(spec, None, False)))
    env.load(path)
    obs = env.reset()
    try:
        walkthrough = oracle_commands(spec, env.entity_names())
    except KeyError:
        return None
    for command in walkthrough:
        if command not in obs.admissible:
            return None
        obs = env.step(command)
    return walkthrough if obs.won else None


# The short name of each task type, for the folders and game ids of a pool of some types only.
SHORT = {"pick_and_place_simple": "simple", "look_at_obj_in_light": "look",
         "pick_clean_then_place_in_recep": "clean", "pick_heat_then_place_in_recep": "heat",
         "pick_cool_then_place_in_recep": "cool", "pick_two_obj_and_place": "two"}


def task_types(chosen=None) -> tuple:
    """The task types of a pool: all six in ALFWorld's order, or the chosen ones in that order."""
    if not chosen:
        return scenes.TASK_TYPES
    unknown = [t for t in chosen if t not in scenes.TASK_TYPES]
    if unknown:
        raise SkillosError(f"env.task_types: {unknown[0]!r} is not an ALFWorld task type "
                           f"({', '.join(scenes.TASK_TYPES)})")
    return tuple(t for t in scenes.TASK_TYPES if t in chosen)


def _pool_tag(types: tuple) -> str:
    return "" if types == scenes.TASK_TYPES else "-" + "+".join(SHORT[t] for t in types)


def _generate_one(split, index, seed, plans, env, folder, types=scenes.TASK_TYPES) -> Game:
    task_type = types[index % len(types)]
    for attempt in range(MAX_ATTEMPTS):
        rng = random.Random(_seed(seed, split, index, attempt))
        spec = generator.generate(rng.choice(plans), task_type, rng)
        if spec is None:
            continue
        walkthrough = verify(spec, env, folder)
        if walkthrough is None:
            continue
        game = generator.game_json(spec, walkthrough, True)
        (folder / "game.tw-pddl").write_text(json.dumps(game))
        extra = {"generator": generator.GENERATOR_VERSION, "seed": seed, "split": split,
                 "index": index, "attempt": attempt, "placements": spec.placements}
        (folder / "traj_data.json").write_text(json.dumps(spec.traj_data(extra), indent=1))
        return Game(f"{split}{_pool_tag(types)}-{index:04d}", str(folder / "game.tw-pddl"), task_type, spec.task,
                    spec.plan, generator.content_hash(game), len(walkthrough))
    raise RuntimeError(f"no solvable {task_type} game for {split} #{index} in {MAX_ATTEMPTS} attempts")


def make_games(split: str, n: int, seed: int, cache_dir: str | Path | None = None,
               progress=None, types=None) -> list[Game]:
    """n verified games of a split, from the cache or freshly generated (then cached); `types`:
    only these task types, in turn (None: all six)."""
    if n < 1:
        raise SkillosError(f"env.n_games must be at least 1, got {n}")
    plans, types = split_plans(split), task_types(types)
    root = Path(cache_dir) if cache_dir else engine.cache_root()
    folder = root / generator.GENERATOR_VERSION.replace("/", "-") / f"{split}-seed{seed}-n{n}{_pool_tag(types)}"
    manifest = folder / "manifest.json"
    if manifest.is_file():
        data = json.loads(manifest.read_text())
        return [Game(**{**g, "path": str(folder / g["path"])}) for g in data["games"]]
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{split}-"))
    try:
        env = AlfworldEnv(fast=True)
        games = []
        for i in range(n):
            game_dir = tmp / f"{i:04d}"
            game_dir.mkdir()
            games.append(_generate_one(split, i, seed, plans, env, game_dir, types))
            if progress:
                progress(i + 1, n)
        rel = [{**asdict(g), "path": str(Path(g.path).relative_to(tmp))} for g in games]
        record = {"generator": generator.GENERATOR_VERSION, "split": split, "seed": seed, "n": n,
                  "task_types": list(types),
                  "floor_plans": plans, "placement_prior": generator.PLACEMENT_PRIOR,
                  "games": rel}
        (tmp / "manifest.json").write_text(json.dumps(record, indent=1))
        folder.parent.mkdir(parents=True, exist_ok=True)
        if folder.exists():  # another process finished first: keep theirs
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return make_games(split, n, seed, cache_dir, types=types)


def load_official(data_root: str | Path, split: str) -> list[Game]:
    """Games from the official ALFWorld data (`$ALFWORLD_DATA/json_2.1.1/<split>`), collected
    as AlfredTWEnv does: skip movable/sliced tasks and games not marked solvable."""
    root = Path(data_root) / "json_2.1.1" / split
    if not root.is_dir():
        raise SkillosError(f"ALFWORLD_DATA has no {root}; expected the official json_2.1.1 layout")
    games = []
    for traj_path in sorted(root.rglob("traj_data.json")):
        folder = traj_path.parent
        game_path = folder / "game.tw-pddl"
        if "movable" in str(folder) or "Sliced" in str(folder) or not game_path.is_file():
            continue
        traj = json.loads(traj_path.read_text())
        data = json.loads(game_path.read_text())
        if traj.get("task_type") not in scenes.TASK_TYPES or not data.get("solvable"):
            continue
        desc = traj.get("turk_annotations", {}).get("anns", [{}])[0].get("task_desc", "")
        games.append(Game(str(folder.relative_to(root)), str(game_path), traj["task_type"], desc,
                          traj.get("scene", {}).get("scene_num", -1), generator.content_hash(data),
                          len(data.get("walkthrough") or [])))
    return games
