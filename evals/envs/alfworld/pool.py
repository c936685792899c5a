"""The ALFWorld engine in a pool of worker processes: games in flight stop sharing one interpreter.

In one process every game's engine call (a step ~2-4 ms, a load ~100 ms: a fresh 33 MB copy of
fast-downward's library and a tatsu parse of the game's PDDL grammar) holds `evals.runner.
ENGINE_LOCK` and the interpreter lock, so on a machine with spare cores the executor waits on
one Python process. Here each game lives in one of N worker processes:

* `EnginePool(n).make_env()` is a game env with AlfworldEnv's surface (`load`, `reset`, `step`,
  `task`, `entity_names`); `load` pins the game to a worker (the one with fewest games, the
  game's last one on a tie) and its `reset`/`step` go to that worker until the next `load`.
* A worker runs the same `AlfworldEnv(fast=True)` code, so observations, admissible commands and
  `won` are the in-process engine's (tests/test_engine_pool.py plays the same games both ways).
  It makes loads cheaper by keeping, per worker, the parsed game file and its `GameLogic` (read
  only during play; keyed by the file's path, size and mtime, LRU-bounded); like every env, a
  worker's games reuse the fast-downward library copy of a game that ended (planner.py).
* Workers are started with the `spawn` context (safe beside the trainer's threads), ignore
  SIGINT (the parent shuts them down) and exit when the parent's end of their pipe closes. As
  with any spawn pool, a script run as `python script.py` that makes one must keep its top level
  under `if __name__ == "__main__":` (each worker imports the script; `python -c` and the CLI
  are fine). A worker's start (~1-2 s) is paid once per pool, not per game.
* A worker that dies (killed, out of memory, a crash in the C library) fails the calls of its
  games with `EngineWorkerDied`, the call in flight included, never a hang; the runner records
  such a game as unmeasured. The next `load` of any env starts a fresh worker in its place.
* `close()` (or the context manager, or interpreter exit) stops every worker: asked first, then
  terminated, then killed.

`evals.runner.play` holds ENGINE_LOCK only for envs whose engine is in this interpreter; a pooled
env says `own_process = True`.
"""

from __future__ import annotations

import itertools
import os
import threading
import weakref
from collections import OrderedDict, deque
from multiprocessing.connection import wait
from pathlib import Path

from skillos.errors import SkillosError
from skillos.evals.envs.alfworld import engine, planner
from skillos.evals.envs.alfworld.env import AlfworldEnv, fill_task

GAME_CACHE_SIZE = 128  # parsed games kept per worker
STOP_GRACE_S = 2.0


class EngineWorkerDied(SkillosError):
    """An engine worker process died (or stopped answering): the games it held are lost."""


# -- the worker process -------------------------------------------------------------------------
class _GameCache:
    """One worker's parsed game files and their GameLogic (its library copies: planner.py)."""

    def __init__(self, size: int):
        self.size = size
        self.games: OrderedDict = OrderedDict()  # (path, size, mtime_ns) -> parsed JSON
        self.logics: OrderedDict = OrderedDict()  # (domain, grammar) -> GameLogic
        self.loads = self.hits = 0
        from textworld.envs.pddl import logic as pddl_logic

        self.make_logic = pddl_logic.GameLogic  # TextWorld's own (the worker replaces it with self.logic)

    def _lru(self, table: OrderedDict, key, make):
        if key in table:
            table.move_to_end(key)
            return table[key], True
        value = table[key] = make()
        if len(table) > self.size:
            table.popitem(last=False)
        return value, False

    def game(self, path: str) -> dict:
        """The game file's JSON (read only), its task filled in where the file leaves it to the
        loader, by AlfworldEnv.load's rule."""
        import json

        stat = os.stat(path)

        def parse():
            data = json.loads(Path(path).read_text())
            fill_task(data, path)
            return data

        return self._lru(self.games, (str(path), stat.st_size, stat.st_mtime_ns), parse)[0]

    def logic(self, domain: str, grammar: str):
        """TextWorld's GameLogic of a game; read only during play (its types are only added to,
        the same ones each time), so one is shared by every load of the game."""
        value, hit = self._lru(self.logics, (domain, grammar), lambda: self.make_logic(domain=domain, grammar=grammar))
        self.hits += hit
        return value


def _worker_env_class(cache: _GameCache):
    """AlfworldEnv whose load reads through the worker's cache (built in a worker only: it makes
    TextWorld's GameLogic constructor, in this process, return the cached logic of a game)."""
    from textworld.envs.pddl import logic as pddl_logic

    pddl_logic.GameLogic = cache.logic  # PddlEnv.load looks it up on each load

    class WorkerEnv(AlfworldEnv):
        def load(self, game_file) -> None:
            """AlfworldEnv.load, from the cached parse (on the env's one library copy)."""
            cache.loads += 1
            self._load(cache.game(str(game_file)))  # PddlEnv.load takes the parsed game as it takes a path's

    return WorkerEnv


def _serve(conn, cache_size: int) -> None:
    """A worker's loop: (op, handle, arg, dropped handles) in, ("ok", value) or ("err", exc) out."""
    import signal
    import time

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops us

    engine.enable()
    cache = _GameCache(cache_size)
    WorkerEnv = _worker_env_class(cache)
    games: dict = {}
    while True:
        try:
            op, handle, arg, dropped = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return  # the parent is gone
        for h in dropped:
            game = games.pop(h, None)
            if game is not None:
                game.close()
        if op == "stop":
            return
        try:
            if op == "load":
                game = games.get(handle)
                if game is None:
                    game = games[handle] = WorkerEnv()
                value = game.load(arg)
            elif op == "reset":
                obs = games[handle].reset()
                value = (obs, games[handle].task)
            elif op == "step":
                value = games[handle].step(arg)
            elif op == "where":  # the process holding this game (tests: a game stays pinned)
                value = os.getpid() if handle in games else None
            elif op == "entity_names":
                value = games[handle].entity_names()
            elif op == "close":
                game = games.pop(handle, None)
                value = game.close() if game is not None else None
            elif op == "stats":
                t = os.times()
                value = {"pid": os.getpid(), "cpu_seconds": t.user + t.system, "games": len(games),
                         "loads": cache.loads, "logic_hits": cache.hits, "libs_made": planner.made(),
                         "time": time.time()}
            else:
                raise ValueError(f"unknown engine op {op!r}")
            reply = ("ok", value)
        except Exception as exc:  # noqa: BLE001 - the caller raises it, as the in-process engine would
            reply = ("err", exc)
        try:
            conn.send(reply)
        except Exception:  # noqa: BLE001 - an unpicklable exception: its text
            exc = reply[1]
            conn.send(("err", RuntimeError(f"{type(exc).__name__}: {exc}")))


# -- the parent's side --------------------------------------------------------------------------
class _Worker:
    def __init__(self, ctx, index: int, cache_size: int):
        self.index = index
        parent, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, cache_size), name=f"skillos-engine-{index}",
                                   daemon=True)
        self.process.start()
        child.close()  # only the worker holds its end: its death is EOF here
        self.conn = parent
        self.pid = self.process.pid
        self.lock = threading.Lock()  # one request out per worker (the worker serves one at a time)
        self.games = 0  # envs pinned here now
        self.dropped: deque = deque()  # handles of envs gone since the last request (freed with it)
        self.dead: str | None = None

    def alive(self) -> bool:
        if self.dead is None and not self.process.is_alive():
            self.dead = self._death()
        return self.dead is None

    def _death(self) -> str:
        self.process.join(0.5)
        return f"engine worker {self.index} (pid {self.pid}) died (exit code {self.process.exitcode})"

    def call(self, op: str, handle: int, arg=None, timeout: float | None = None):
        with self.lock:
            if self.dead is not None:
                raise EngineWorkerDied(f"{self.dead}; its games are lost")
            dropped = []
            while self.dropped:  # deque appends and pops are atomic: no handle is lost to a race
                dropped.append(self.dropped.popleft())
            try:
                self.conn.send((op, handle, arg, dropped))
                ready = wait([self.conn, self.process.sentinel], timeout)
                if self.conn in ready:
                    status, value = self.conn.recv()
                elif ready:
                    raise EOFError
                else:
                    self.process.kill()
                    self.dead = (f"engine worker {self.index} (pid {self.pid}) gave no answer to {op!r} in "
                                 f"{timeout:g} s and was killed")
                    raise EngineWorkerDied(f"{self.dead}; its games are lost")
            except (EOFError, OSError):
                self.dead = self._death()
                raise EngineWorkerDied(f"{self.dead} during {op!r}; its games are lost") from None
            except BaseException:  # interrupted (Ctrl-C, SIGTERM) between send and recv: its answer
                # would be read as the next request's, another game's observation; the worker goes
                self.process.kill()
                self.dead = f"engine worker {self.index} (pid {self.pid}) was killed: a {op!r} was interrupted"
                raise
        if status == "err":
            raise value
        return value

    def stop(self) -> None:
        if self.lock.acquire(timeout=STOP_GRACE_S):
            try:
                if self.dead is None:
                    self.conn.send(("stop", None, None, []))
            except (OSError, ValueError):
                pass
            finally:
                self.lock.release()
        self.process.join(STOP_GRACE_S)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(STOP_GRACE_S)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(STOP_GRACE_S)
        self.dead = self.dead or f"engine worker {self.index} (pid {self.pid}) was stopped"
        self.conn.close()


def _shutdown(workers: list) -> None:
    for worker in list(workers):
        worker.stop()


# The longest one call (load, reset, step) may take before its worker is taken for wedged (stopped,
# or stuck in the planner's C library): a game load takes ~1-2 s on a loaded machine, so this is
# generous, and every wait on a worker is bounded by it.
CALL_TIMEOUT_S = 120.0


class EnginePool:
    """N engine worker processes; `make_env()` gives a game env whose games run in one of them.

    timeout_s: a worker that gives no answer to one call in this long is killed and its games
    fail, unmeasured (default CALL_TIMEOUT_S; None: no bound, for a test; a worker that dies is
    noticed at once either way)."""

    def __init__(self, workers: int, *, context: str = "spawn", timeout_s: float | None = CALL_TIMEOUT_S,
                 cache_size: int = GAME_CACHE_SIZE):
        import multiprocessing

        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise SkillosError(f"engine workers must be a whole number of at least 1, got {workers!r}")
        self._ctx = multiprocessing.get_context(context)
        self.timeout_s, self._cache_size = timeout_s, cache_size
        self._lock = threading.RLock()  # a PooledEnv collected while it is held frees its game here too
        self._handles = itertools.count()
        self._workers = [_Worker(self._ctx, i, cache_size) for i in range(workers)]
        self._finalizer = weakref.finalize(self, _shutdown, self._workers)  # also at interpreter exit
        self.restarted = 0

    @property
    def size(self) -> int:
        return len(self._workers)

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def pids(self) -> list[int]:
        return [w.pid for w in self._workers]

    def processes(self) -> list:
        return [w.process for w in self._workers]

    def stats(self) -> list[dict]:
        """Each live worker's CPU seconds, games held, loads and cache hits (waits for it to start)."""
        out = []
        for worker in list(self._workers):
            try:
                out.append(worker.call("stats", -1, timeout=self.timeout_s))
            except EngineWorkerDied:
                continue
        return out

    def make_env(self) -> "PooledEnv":
        if self.closed:
            raise SkillosError("the engine pool is closed")
        return PooledEnv(self)

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> "EnginePool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- pinning ------------------------------------------------------------------------------
    def _assign(self, current: "_Worker | None") -> "_Worker":
        """The worker a game loading now lives on: the one with fewest games (a dead one replaced
        first), the env's current worker on a tie."""
        with self._lock:
            if self.closed:
                raise SkillosError("the engine pool is closed")
            for i, worker in enumerate(self._workers):
                if not worker.alive():
                    self._workers[i] = _Worker(self._ctx, worker.index, self._cache_size)
                    self.restarted += 1
            if current is not None and current.alive() and current in self._workers:
                current.games -= 1
            else:
                current = None
            best = min(self._workers, key=lambda w: (w.games, w is not current, w.index))
            best.games += 1
            return best

    def _release(self, worker: "_Worker", handle: int) -> None:
        with self._lock:
            worker.games -= 1
            worker.dropped.append(handle)  # freed with the worker's next request

    # a pooled env that is garbage-collected frees its game the same way
    def _forget(self, ref: list, handle: int) -> None:
        worker = ref[0]
        if worker is not None:
            self._release(worker, handle)


class PooledEnv:
    """AlfworldEnv's surface; the game runs in one of the pool's workers."""

    own_process = True  # its engine is not in this interpreter: no ENGINE_LOCK (evals.runner)

    def __init__(self, pool: EnginePool):
        self._pool = pool
        self._handle = next(pool._handles)
        self._where: list = [None]  # the worker this env's game is pinned to
        self.task = ""
        weakref.finalize(self, pool._forget, self._where, self._handle)

    @property
    def worker_pid(self) -> int | None:
        worker = self._where[0]
        return None if worker is None else worker.pid

    def _call(self, op: str, arg=None):
        worker = self._where[0]
        if worker is None:
            raise RuntimeError("no game loaded")
        return worker.call(op, self._handle, arg, self._pool.timeout_s)

    def load(self, game_file) -> None:
        old = self._where[0]
        worker = self._pool._assign(old)
        if old is not None and old is not worker:
            old.dropped.append(self._handle)  # its old worker frees it with its next request
        self._where[0] = worker
        self.task = ""
        worker.call("load", self._handle, str(game_file), self._pool.timeout_s)

    def reset(self):
        obs, self.task = self._call("reset")
        return obs

    def step(self, command: str):
        return self._call("step", command)

    def entity_names(self) -> dict[str, str]:
        return self._call("entity_names")

    def serving_pid(self) -> int | None:
        """The pid of the worker process that holds this env's game, asked of the worker."""
        return self._call("where")

    def close(self) -> None:
        worker, self._where[0] = self._where[0], None
        if worker is not None:
            self._pool._release(worker, self._handle)
