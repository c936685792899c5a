"""The ALFWorld engine in worker processes (evals/envs/alfworld/pool.py): the same games played with
the same actions give the in-process engine's observations, each game stays on one worker, a
killed worker fails its games loudly instead of hanging, and the pool leaves no process behind."""

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest
from conftest import ROOT

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")

from skillos.evals.envs.alfworld.env import AlfworldEnv  # noqa: E402
from skillos.evals.envs.alfworld.pool import EnginePool, EngineWorkerDied, PooledEnv  # noqa: E402

pytestmark = pytest.mark.alfworld
STEPS = 12


@pytest.fixture(scope="module")
def games(game_cache):
    from skillos.evals.envs.alfworld.games import make_games

    return make_games("valid_unseen", 6, 0)  # one of each task type


@pytest.fixture(scope="module")
def pool():
    with EnginePool(2) as p:
        yield p


def actions(game, seed: int) -> list:
    """A game's walkthrough (so games are won) for even seeds; seeded picks with a command that is
    not admissible mixed in for odd ones. Resolved against each observation by `pick`."""
    if seed % 2 == 0:
        return list(json.loads(open(game.path).read())["walkthrough"])
    return [None] * STEPS


def pick(plan, obs, rng):
    action = plan.pop(0)
    if action is not None:
        return action
    return rng.choice(list(obs.admissible) + ["fly to the moon"])


def record(env, game, seed):
    """Everything an env shows of one game: the reset, the task, each step's observation."""
    rng, plan = random.Random(seed), actions(game, seed)
    env.load(game.path)
    seen = [env.reset(), env.task]
    while plan:
        obs = env.step(pick(plan, seen[-1] if len(seen) > 2 else seen[0], rng))
        seen.append(obs)
    return seen


def test_the_pool_shows_what_the_in_process_engine_shows(games, pool):
    expected = [record(AlfworldEnv(fast=True), g, i) for i, g in enumerate(games)]
    assert any(seen[-1].won for seen in expected) and not all(seen[-1].won for seen in expected)
    env = pool.make_env()
    assert [record(env, g, i) for i, g in enumerate(games)] == expected
    # again: the parsed games and library copies of each worker are reused, the games are not
    assert [record(env, g, i) for i, g in enumerate(games)] == expected
    # games in flight at once, several on one worker: each keeps its own state
    got = [None] * len(games)

    def run(i):
        got[i] = record(pool.make_env(), games[i], i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(games))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert got == expected
    assert sum(s["logic_hits"] for s in pool.stats()) > 0


def test_interleaved_games_on_one_worker_keep_their_own_state(games):
    expected = [record(AlfworldEnv(fast=True), g, 0) for g in games[:2]]
    with EnginePool(1) as one:
        a, b = one.make_env(), one.make_env()
        a.load(games[0].path), b.load(games[1].path)
        seen = {a: [a.reset(), a.task], b: [b.reset(), b.task]}
        plans = {a: actions(games[0], 0), b: actions(games[1], 0)}
        while plans[a] or plans[b]:
            for env in (a, b):
                if plans[env]:
                    seen[env].append(env.step(plans[env].pop(0)))
        assert [seen[a], seen[b]] == expected


def test_rows_through_the_pool_are_the_in_process_rows(games, pool):
    from skillos.evals.envs.household.heuristic import HeuristicExecutor
    from skillos.evals.runner import run_arm

    play = dict(repo=None, retrieval_mode="bm25", max_steps=30, top_k=5, wave_size=1)
    local = run_arm("a", games, env=AlfworldEnv(), make_env=AlfworldEnv, executor=HeuristicExecutor(),
                    concurrency=1, **play)
    pooled = run_arm("a", games, env=pool.make_env(), make_env=pool.make_env, executor=HeuristicExecutor(),
                     concurrency=3, **play)
    assert pooled == local and any(r["success"] for r in local)


def test_a_game_stays_on_one_worker_for_its_life(games, pool):
    envs = [pool.make_env() for _ in range(4)]
    for env, game in zip(envs, games):
        env.load(game.path)
        pid = env.worker_pid
        assert pid in pool.pids() and env.serving_pid() == pid
        obs = env.reset()
        for _ in range(5):
            obs = env.step(obs.admissible[0])
            assert env.worker_pid == pid and env.serving_pid() == pid
    assert len({env.worker_pid for env in envs}) == 2  # spread over both workers


def test_a_killed_worker_fails_its_game_loudly_and_the_next_load_gets_a_fresh_one(games):
    from skillos.evals.envs.household.heuristic import HeuristicExecutor
    from skillos.evals.runner import play

    with EnginePool(1) as one:
        env = one.make_env()
        env.load(games[0].path)
        obs = env.reset()
        victim = env.worker_pid
        os.kill(victim, signal.SIGKILL)
        outcome = {}

        def step():
            try:
                outcome["obs"] = env.step(obs.admissible[0])
            except Exception as exc:  # noqa: BLE001
                outcome["error"] = exc

        t = threading.Thread(target=step, daemon=True)
        t.start()
        t.join(30)
        assert not t.is_alive(), "a call to a dead worker hung"
        assert isinstance(outcome.get("error"), EngineWorkerDied)
        assert f"pid {victim}" in str(outcome["error"]) and "died" in str(outcome["error"])
        with pytest.raises(EngineWorkerDied):  # still its game: lost, every time
            env.step("look")
        # the runner records such a game as unmeasured, never a loss; the next load plays again
        env.load(games[1].path)
        assert env.worker_pid != victim
        os.kill(env.worker_pid, signal.SIGKILL)
        traj = play(env, HeuristicExecutor(), None, games[1], 30, 0)
        assert traj.won is None and "EngineWorkerDied" in traj.unmeasured_reason
        traj = play(env, HeuristicExecutor(), None, games[1], 30, 0)
        assert traj.won is not None and one.restarted == 2


def test_a_worker_killed_mid_call_does_not_hang_the_caller(games):
    with EnginePool(1) as one:
        env = one.make_env()
        env.load(games[0].path)
        env.reset()
        errors, stop = [], threading.Event()

        def hammer():
            try:
                while not stop.is_set():
                    env.load(games[0].path)  # ~the slowest call: likely in flight at the kill
                    env.reset()
            except EngineWorkerDied as exc:
                errors.append(exc)

        t = threading.Thread(target=hammer, daemon=True)
        t.start()
        time.sleep(0.3)
        os.kill(env.worker_pid, signal.SIGKILL)
        t.join(30)
        stop.set()
        assert not t.is_alive() and len(errors) == 1


def test_a_call_interrupted_before_its_answer_never_hands_another_game_that_answer(games, monkeypatch):
    """Ctrl-C (or SIGTERM) between a request and its answer: the worker is killed, so its unread
    answer is never read as the next game's; that game is lost, the next load plays its own."""
    from skillos.evals.envs.alfworld import pool as pool_module

    with EnginePool(1) as one:
        a, b = one.make_env(), one.make_env()
        a.load(games[0].path)
        b.load(games[1].path)
        real = pool_module.wait

        def interrupted(*args, **kwargs):
            real(*args, **kwargs)  # the worker has answered; the caller never reads it
            raise KeyboardInterrupt

        monkeypatch.setattr(pool_module, "wait", interrupted)
        with pytest.raises(KeyboardInterrupt):
            a.reset()
        monkeypatch.setattr(pool_module, "wait", real)
        with pytest.raises(EngineWorkerDied, match="interrupted"):
            b.reset()
        b.load(games[1].path)
        assert b.reset().text == in_process_intro(games[1]) and b.task == games[1].task


def in_process_intro(game) -> str:
    env = AlfworldEnv(fast=True)
    env.load(game.path)
    return env.reset().text


def test_a_pooled_env_collected_while_the_pool_lock_is_held_does_not_deadlock(games):
    import gc

    with EnginePool(1) as one:
        env = one.make_env()
        env.load(games[0].path)
        env.cycle = env  # collected only by the cycle collector, which may run anywhere
        del env
        done = threading.Event()

        def collect():
            with one._lock:
                gc.collect()  # the env's finaliser frees its game, taking the same lock
            done.set()

        threading.Thread(target=collect, daemon=True).start()
        assert done.wait(30), "the finaliser waited on the lock its own thread holds"


def test_close_stops_every_worker_and_the_pool_refuses_new_games():
    from skillos.errors import SkillosError

    pool = EnginePool(2)
    processes = pool.processes()
    assert all(p.is_alive() for p in processes)
    pool.close()
    assert not any(p.is_alive() for p in processes) and pool.closed
    pool.close()  # idempotent
    with pytest.raises(SkillosError, match="closed"):
        pool.make_env()


def test_a_pool_left_open_is_stopped_at_exit(tmp_path):
    script = ("from skillos.evals.envs.alfworld.pool import EnginePool\n"
              "pool = EnginePool(2)\n"
              "print(' '.join(map(str, pool.pids())), flush=True)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for pid in map(int, done.stdout.split()):
        deadline = time.time() + 10
        while _running(pid) and time.time() < deadline:
            time.sleep(0.1)
        assert not _running(pid), f"engine worker {pid} outlived its parent"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_only_an_in_process_engine_takes_the_engine_lock(pool):
    from skillos.evals.runner import ENGINE_LOCK, engine_lock

    assert engine_lock(AlfworldEnv(fast=True)) is ENGINE_LOCK
    assert isinstance(pool.make_env(), PooledEnv) and engine_lock(pool.make_env()) is not ENGINE_LOCK


def test_engine_workers_selects_the_pool_and_only_for_the_household_environment():
    from skillos import config
    from skillos.training.curator.env import engine_pool

    assert engine_pool("household", None) is None and engine_pool("household", 0) is None
    for name in ("reasoning", "slate"):  # no engine (reasoning), or a trainer that never reads the key (slate)
        with pytest.raises(config.ConfigError, match=f"env.engine_workers: the '{name}' environment has no game engine"):
            config.from_dict({"env": {"name": name, "engine_workers": 2}})
    made = engine_pool("household", 1)
    try:
        assert isinstance(made, EnginePool) and isinstance(made.make_env(), PooledEnv)
    finally:
        made.close()


def test_env_engine_workers_reaches_the_training_setup_and_leaves_the_identity():
    from skillos import config
    from skillos.training.curator.env import make_setup

    base = config.load(ROOT / "training" / "configs" / "cpu-smoke.yaml")
    pooled = config.with_sets(base, ["env.engine_workers=1"])
    assert pooled.hash() == base.hash()  # where the engine runs moves no result
    with pytest.raises(config.ConfigError, match="env.engine_workers: must be between 0 and 256"):
        config.with_sets(base, ["env.engine_workers=-1"])
    games = []
    assert make_setup(base, games).engine_pool is None
    setup = make_setup(pooled, games)
    try:
        assert isinstance(setup.engine_pool, EnginePool) and isinstance(setup.make_env(), PooledEnv)
    finally:
        setup.close()


def test_a_stopped_worker_is_killed_at_the_calls_bound_not_waited_on_forever(games):
    """A worker that stops answering (SIGSTOP, or wedged in the planner's C library) blocks no
    rollout: its call ends at the pool's bound, which training's pool has by default."""
    from skillos.evals.envs.alfworld.pool import CALL_TIMEOUT_S
    from skillos.training.curator.env import engine_pool

    built = engine_pool("household", 1)
    try:
        assert built.timeout_s == CALL_TIMEOUT_S
    finally:
        built.close()
    with EnginePool(1, timeout_s=2.0) as one:
        env = one.make_env()
        env.load(games[0].path)
        env.reset()
        victim = env.worker_pid
        os.kill(victim, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(EngineWorkerDied, match=r"gave no answer to 'step' in 2 s and was killed"):
            env.step("look")
        assert time.monotonic() - started < 10
        env.load(games[1].path)  # the next game gets a fresh worker
        assert env.worker_pid != victim and env.reset()
