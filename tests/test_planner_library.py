"""fast-downward's planner library is loaded a bounded number of times per process
(evals/envs/alfworld/planner.py): TextWorld's own env copied the 33.8 MB library per game and
never unloaded it, so a process that played 2,103 games held 71 GB of deleted copies until the
disk was full. Many games in one process, on every path that builds an env, now hold as many
copies as envs are alive at once."""

import gc
import os
from pathlib import Path

import pytest

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")

from skillos.evals.envs.alfworld import planner  # noqa: E402
from skillos.evals.envs.alfworld.env import AlfworldEnv  # noqa: E402

pytestmark = pytest.mark.alfworld
LIBRARY = "libdownward.so"


def held_copies() -> set:
    """The deleted library copies this process keeps mapped (by inode): each holds its disk."""
    inodes = set()
    for line in Path("/proc/self/maps").read_text().splitlines():
        if LIBRARY in line and line.endswith("(deleted)"):
            inodes.add(line.split()[4])
    return inodes


def library_bytes() -> int:
    from fast_downward import interface

    return os.path.getsize(interface.DOWNWARD_LIB_PATH)


@pytest.fixture(scope="module")
def games(game_cache):
    from skillos.evals.envs.alfworld.games import make_games

    return make_games("valid_unseen", 6, 0)


def play(env, game, steps: int = 3) -> tuple:
    env.load(game.path)
    obs = env.reset()
    seen = [obs.text]
    for _ in range(steps):
        obs = env.step(obs.admissible[0])
        seen.append(obs.text)
    return tuple(seen), env.task


def test_many_games_in_one_process_hold_as_many_copies_as_envs_alive_at_once(games):
    gc.collect()
    before, made = held_copies(), planner.made()
    one = AlfworldEnv(fast=True)
    for _ in range(8):  # one env, many games: one copy
        for game in games:
            play(one, game)
    for _ in range(3):  # an env per game, dropped after it (the runner's and the slates' way)
        for game in games:
            play(AlfworldEnv(fast=True), game)
            gc.collect()
    from skillos.evals.envs.registry import environment

    household = environment("household")
    for game in games:  # the registry's env, as eval, training and the canaries build it
        play(household.make_env(games), game)
    gc.collect()
    new = held_copies() - before
    assert planner.made() - made <= 2, "a copy per game: the planner library leaks"
    assert len(new) <= 2, f"{len(new)} new deleted copies mapped ({len(new) * library_bytes() / 1e6:.0f} MB held)"


def test_live_games_keep_their_own_copy_and_state(games):
    """Two games alive at once need two copies (the library keeps the game in globals): played
    interleaved, each shows what it shows played alone."""
    alone = [play(AlfworldEnv(fast=True), g, steps=4) for g in games[:2]]
    a, b = AlfworldEnv(fast=True), AlfworldEnv(fast=True)
    a.load(games[0].path), b.load(games[1].path)
    seen = {a: [a.reset()], b: [b.reset()]}
    for _ in range(4):
        for env in (a, b):
            seen[env].append(env.step(seen[env][-1].admissible[0]))
    assert [(tuple(o.text for o in seen[e]), e.task) for e in (a, b)] == alone
    assert a._planner.lib() is not b._planner.lib()


def test_a_closed_env_gives_its_copy_to_the_next_game(games):
    first = AlfworldEnv(fast=True)
    play(first, games[0])
    lib = first._planner.lib()
    first.close()
    second = AlfworldEnv(fast=True)
    assert play(second, games[1]) == play(AlfworldEnv(fast=True), games[1])
    assert second._planner.lib() is lib
