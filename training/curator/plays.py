"""Game plays remembered by what decides them, for executors that are deterministic.

A deterministic executor (the CPU heuristic one: `deterministic = True`) plays a game the same way
every time it is handed the same skills: its trajectory is a function of (game, executor, repo
content, retrieval mode, max_steps, top_k). Training plays the same game with the same repo many
times (every rollout of a group plays position 1 with an empty repo; a miniature's curator writes
a few distinct skills; a canary evaluates the same held-out games before and after each of its
runs), so this process keeps each such play once and hands it back. The reward, masks and rollout
code still run on every call: only the engine's replay of a game already played is skipped.
Unmeasured plays (a fault) are never kept: the next call plays again. Bounded (LRU).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import threading
from collections import OrderedDict

SIZE = 8192  # plays kept (a 40-step trajectory is ~12 KB of text: ~100 MB at most)
_lock = threading.Lock()
_kept: OrderedDict = OrderedDict()
counts = {"hits": 0, "plays": 0}


def deterministic(executor) -> bool:
    """Whether `executor` plays a game the same way each time it is given the same skills."""
    return bool(getattr(executor, "deterministic", False))


def key(game, executor, repo, retrieval_mode: str, max_steps: int, top_k: int) -> str:
    """What decides a deterministic play: the game's file as it is now, the executor, the repo's
    skills in order (retrieval ranks ties by it), and the play's settings."""
    try:
        stat = os.stat(game.path)
        where = f"{game.path}|{stat.st_size}|{stat.st_mtime_ns}"
    except (OSError, TypeError):
        where = str(getattr(game, "path", ""))
    h = hashlib.sha256(f"{game.id}|{where}|{getattr(executor, 'name', type(executor).__name__)}|"
                       f"{retrieval_mode}|{max_steps}|{top_k}|{repo.digest()}".encode())
    return h.hexdigest()


def play(play_fn, game, executor, repo, retrieval_mode: str, max_steps: int, top_k: int):
    """`play_fn()`'s trajectory, or the one kept for the same play (a shallow copy). The caller
    vouches that the environment's game files decide its plays (its environment's `replayable`)."""
    if not deterministic(executor):
        return play_fn()
    k = key(game, executor, repo, retrieval_mode, max_steps, top_k)
    with _lock:
        kept = _kept.get(k)
        if kept is not None:
            _kept.move_to_end(k)
            counts["hits"] += 1
            return dataclasses.replace(kept)
    traj = play_fn()
    with _lock:
        counts["plays"] += 1
        if traj.won is not None:
            _kept[k] = traj
            if len(_kept) > SIZE:
                _kept.popitem(last=False)
    return dataclasses.replace(traj)


def clear() -> None:
    with _lock:
        _kept.clear()
        counts.update(hits=0, plays=0)
