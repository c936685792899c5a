"""Curator training data: groups of |G| same-type tasks, one group per dataset row.

Task types come round-robin (uniform), in an order fixed by the seed; within a type, tasks are
drawn without replacement from a seeded permutation and a new permutation starts only when the
type's pool is used up. Seeds come from sha256, never Python's `hash()` (salted per process), so
every process of a multi-GPU launch builds the same groups. The gates sample the first groups
to catch a pipeline that degenerates to a fixed task loop.
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


def build_groups(games, group_size: int, n_groups: int, seed: int,
                 min_size: int | None = None) -> list[Group]:
    """`n_groups` groups of `group_size` games of one task type each, from the train pool. With
    `min_size`, each group's size is drawn (seeded, per group) from min_size..group_size, as the
    paper does on reasoning (5-12); types need group_size games to be eligible."""
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
        size = group_size if not min_size else _rng("skillos-group-size", seed, index).randint(
            min(min_size, group_size), group_size)
        picked = []
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
