"""Stock TextWorld PDDL engine vs skillos' memoized engine, on the same games, in one run.

Run by hand: `python tests/benchmarks/bench_alfworld_engine.py [N_GAMES] [STEPS]`.
Workload per game: load, then twice (reset + STEPS random admissible commands, seeded). The fast
engine starts with empty in-memory caches; translations cached on disk by game generation are
used, as in every real run (pass --cold to disable the disk cache too).
Target: fast is at least 10x faster than stock (prints the ratio against that limit).
"""

import os
import random
import sys
import tempfile
import time

TARGET = 10.0


def workload(env, games, steps):
    step_times, reset_times, t0 = [], [], time.perf_counter()
    for game in games:
        rng = random.Random(game.content_hash)
        env.load(game.path)
        for _ in range(2):
            t = time.perf_counter()
            obs = env.reset()
            reset_times.append(time.perf_counter() - t)
            for _ in range(steps):
                command = rng.choice(obs.admissible)
                t = time.perf_counter()
                obs = env.step(command)
                step_times.append(time.perf_counter() - t)
    return time.perf_counter() - t0, step_times, reset_times


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    n_games = int(args[0]) if args else 6
    steps = int(args[1]) if len(args) > 1 else 40
    os.environ.setdefault("SKILLOS_CACHE", tempfile.mkdtemp(prefix="skillos-bench-"))
    from skillos.evals.envs.alfworld import engine, games
    from skillos.evals.envs.alfworld.env import AlfworldEnv

    pool = games.make_games("valid_seen", n_games, seed=123)
    if "--cold" in sys.argv:
        os.environ["SKILLOS_CACHE"] = tempfile.mkdtemp(prefix="skillos-bench-cold-")
    results = {}
    for name, fast in (("stock", False), ("fast", True)):
        engine.disable()
        results[name] = workload(AlfworldEnv(fast=fast), pool, steps)
    engine.enable()
    print(f"{n_games} games x 2 episodes x {steps} random steps (same commands for both engines)")
    for name, (total, st, rt) in results.items():
        print(f"  {name:5s}: total {total:7.2f} s | {len(st) / sum(st):7.1f} steps/s | "
              f"reset mean {1000 * sum(rt) / len(rt):7.1f} ms")
    ratio = results["stock"][0] / results["fast"][0]
    print(f"speedup stock/fast: {ratio:.1f}x  (target >= {TARGET:.0f}x: {ratio / TARGET:.2f} of target)")


if __name__ == "__main__":
    main()
