"""fast-downward's planner library, loaded a bounded number of times per process.

TextWorld's `PddlEnv` constructor calls `fast_downward.load_lib()`, which copies the 33.8 MB
`libdownward.so` into a temporary folder, loads the copy and deletes the folder. A loaded
library is never unloaded, so the deleted copy stays mapped and its disk stays held until the
process exits: one copy per game played (measured: one canary process held 2,103 copies, 71 GB,
until the disk was full). A copy holds its game's planner state in globals, so two games live at
once need two copies, but a game that ended can hand its copy to the next one (the engine pool's
workers did this first; tests/test_engine_pool.py plays the same games both ways).

Here every env that plays games takes one copy from this process's free list when it loads its
first game, keeps it for every game it loads after, and gives it back when it is closed or
collected: the copies held are the most envs alive at once, never the games played.
"""

from __future__ import annotations

import threading
import weakref

_lock = threading.Lock()
_free: list = []
_made = 0


def take():
    """A library copy no live game holds (a fresh one only when every copy is in use)."""
    global _made
    with _lock:
        if _free:
            return _free.pop()
        _made += 1
    import fast_downward  # the engine's planner, compiled on install

    return fast_downward.load_lib()


def give(lib) -> None:
    """A copy back to the free list: its game has ended."""
    with _lock:
        _free.append(lib)


def made() -> int:
    """How many copies this process has loaded (each holds ~34 MB of disk until it exits)."""
    return _made


def pddl_env(infos, lib):
    """TextWorld's PddlEnv on a library copy given, instead of the fresh one its constructor loads."""
    import textworld
    from textworld.envs.pddl import PddlEnv

    env = PddlEnv.__new__(PddlEnv)
    textworld.Environment.__init__(env, infos)  # PddlEnv.__init__ minus its load_lib()
    env.downward_lib = lib
    return env


class Holder:
    """One env's library copy: taken at its first game, kept across its games, given back when
    `release` is called or the owner is collected."""

    def __init__(self, owner):
        self._slot: list = [None]
        weakref.finalize(owner, _give_slot, self._slot)

    def lib(self):
        if self._slot[0] is None:
            self._slot[0] = take()
        return self._slot[0]

    def release(self) -> None:
        _give_slot(self._slot)


def _give_slot(slot: list) -> None:
    lib, slot[0] = slot[0], None
    if lib is not None:
        give(lib)
