"""Curator training data: groups of |G| tasks, one group per dataset row.

`training.grouping` task_type (the method's task stream): every group is |G| tasks of one type,
so the curator's early edits are evaluated on related later tasks. Task types come round-robin
(uniform), in an order fixed by the seed; within a type, tasks are drawn without replacement from
a seeded permutation and a new permutation starts only when the type's pool is used up.
`natural` (the paper's natural-distribution ablation): each group is the next |G| tasks of one
seeded permutation of the whole pool, types as they come, in the pool's own proportions.

`training.curriculum` none: groups in the order drawn (TRL shuffles the rows). `easy_first` (the
curriculum ablation): the groups a run consumes are ordered from the shortest expert walkthrough
(mean `oracle_steps` of the group's tasks) to the longest, and TRL is told not to shuffle them.
`interleaved`: the groups in the order drawn, which with grouping task_type takes the types in
turns, and TRL is told not to shuffle them, so a step of as many prompts as there are types holds
one group of each (shuffled, a step of two prompts holds one type alone half the time, and its
update moves that type's choice without the other's to balance it).

Seeds come from sha256, never Python's `hash()` (salted per process), so every process of a
multi-GPU launch builds the same groups. The gates sample the first groups to catch a pipeline
that degenerates to a fixed task loop.
"""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from dataclasses import dataclass

from skillos.errors import ConfigError


def _rng(*parts) -> random.Random:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True)
class Group:
    index: int
    task_type: str
    game_ids: tuple

    def row(self) -> dict:
        """A dataset row: what TRL passes to the curator environment's reset(**row)."""
        return {"group": self.index, "task_type": self.task_type, "game_ids": list(self.game_ids)}


MIXED = "mixed"  # a natural group's task_type when its tasks are of several types


def build_groups(games, group_size: int, n_groups: int, seed: int, min_size: int | None = None, *,
                 grouping: str, curriculum: str, consumed: int | None = None) -> list[Group]:
    """`n_groups` groups of `group_size` games from the train pool: of one task type each
    (`grouping` task_type), or drawn from the whole pool (natural). With `min_size`, each group's
    size is drawn (seeded, per group) from min_size..group_size, as the paper does on reasoning
    (5-12); types need group_size games to be eligible. `curriculum` easy_first orders each block
    of `consumed` groups (what a run reads before TRL would start over) easiest first."""
    if grouping == "natural":
        groups = _natural(games, group_size, n_groups, seed, min_size)
    else:
        groups = _by_type(games, group_size, n_groups, seed, min_size)
    return _easy_first(games, groups, consumed or len(groups)) if curriculum == "easy_first" else groups


def _size(group_size: int, min_size: int | None, seed: int, index: int) -> int:
    return group_size if not min_size else _rng("skillos-group-size", seed, index).randint(
        min(min_size, group_size), group_size)


def _natural(games, group_size: int, n_groups: int, seed: int, min_size: int | None) -> list[Group]:
    ids = sorted(g.id for g in games)
    if len(ids) < group_size:
        raise ConfigError(f"training.group_size: {group_size} tasks per group, but the train pool has {len(ids)}")
    types = {g.id: g.task_type for g in games}
    queue, epoch, groups = [], 0, []
    for index in range(n_groups):
        size, picked = _size(group_size, min_size, seed, index), []
        while len(picked) < size:
            if not queue:
                queue = list(ids)
                _rng("skillos-natural", seed, epoch).shuffle(queue)
                epoch += 1
            candidate = queue.pop()
            if candidate not in picked:
                picked.append(candidate)
        kinds = {types[i] for i in picked}
        groups.append(Group(index, kinds.pop() if len(kinds) == 1 else MIXED, tuple(picked)))
    return groups


def _easy_first(games, groups: list[Group], block: int) -> list[Group]:
    steps = {g.id: getattr(g, "oracle_steps", None) for g in games}
    if any(not isinstance(steps[i], int) for group in groups for i in group.game_ids):
        raise ConfigError("training.curriculum easy_first orders groups by the length of each task's expert "
                          "walkthrough (oracle_steps); this environment's tasks carry none")

    def difficulty(group):
        return sum(steps[i] for i in group.game_ids) / len(group.game_ids)

    ordered = []
    for start in range(0, len(groups), block):
        ordered += sorted(groups[start:start + block], key=lambda g: (difficulty(g), g.index))
    return [Group(i, g.task_type, g.game_ids) for i, g in enumerate(ordered)]


def _by_type(games, group_size: int, n_groups: int, seed: int, min_size: int | None) -> list[Group]:
    by_type = defaultdict(list)
    for game in sorted(games, key=lambda g: g.id):
        by_type[game.task_type].append(game.id)
    types = sorted(t for t, ids in by_type.items() if len(ids) >= group_size)
    if not types:
        raise ConfigError(f"training.group_size: no task type has {group_size} games in the pool of "
                          f"{len(games)} train games; raise env.n_train_games or lower training.group_size")
    _rng("skillos-type-order", seed).shuffle(types)
    queues = {t: [] for t in types}
    epochs = {t: 0 for t in types}
    groups = []
    for index in range(n_groups):
        kind = types[index % len(types)]
        size, picked = _size(group_size, min_size, seed, index), []
        while len(picked) < size:
            if not queues[kind]:
                order = list(by_type[kind])
                _rng("skillos-groups", seed, kind, epochs[kind]).shuffle(order)
                queues[kind], epochs[kind] = order, epochs[kind] + 1
            candidate = queues[kind].pop()
            if candidate not in picked:
                picked.append(candidate)
        groups.append(Group(index, kind, tuple(picked)))
    return groups
