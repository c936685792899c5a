"""Loading the same games again, as every slate and curator rollout does: the memoized engine with
and without its cached game grammar (evals/envs/alfworld/engine.py), in one run.

Run by hand: `python tests/benchmarks/bench_game_reload.py [N_GAMES] [LOADS]`.
Workload: N_GAMES games (default 8) each loaded LOADS times (default 10) and reset, in turn, on
one env: what a canary's rollouts do (the quick selector canary loaded 16 games 242 times). The
translations are cached on disk by game generation, as in every real run; both arms start warm
from one load of each game, so what differs is the grammar's parse at every load.
Target: loads with the cached grammar are at least 2x faster (prints the ratio against that limit).
"""

import os
import sys
import tempfile
import time

TARGET = 2.0


def workload(env, games, loads) -> float:
    t0 = time.perf_counter()
    for _ in range(loads):
        for game in games:
            env.load(game.path)
            env.reset()
    return time.perf_counter() - t0


def main():
    args = [int(a) for a in sys.argv[1:]]
    n_games, loads = (args + [8, 10][len(args):])[:2]
    os.environ.setdefault("SKILLOS_CACHE", tempfile.mkdtemp(prefix="skillos-bench-"))
    import textworld.envs.pddl.logic as game_logic

    from skillos.evals.envs.alfworld import engine, games as pool
    from skillos.evals.envs.alfworld.env import AlfworldEnv

    games = pool.make_games("valid_seen", n_games, seed=0)
    env = AlfworldEnv(fast=True)
    workload(env, games, 1)  # translations and the first parses: both arms start from here
    cached = workload(env, games, loads)
    parse = engine._ORIGINALS["parse_game"]
    memo, game_logic._parse_and_convert = game_logic._parse_and_convert, parse  # the parse at every load
    try:
        uncached = workload(env, games, loads)
    finally:
        game_logic._parse_and_convert = memo
    n = n_games * loads
    ratio = uncached / cached
    print(f"{n} loads+resets of {n_games} games: cached grammar {cached / n * 1000:.1f} ms each, "
          f"parsed at every load {uncached / n * 1000:.1f} ms each")
    print(f"ratio {ratio:.2f}x (target >= {TARGET:.0f}x: {'met' if ratio >= TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()
