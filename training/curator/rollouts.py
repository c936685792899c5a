"""Every rollout of a GRPO step in flight: the curator environment's resets run at once across the
completions of a step, and each rollout plays its tool rounds on its own, not one round after another.

Why this mechanism. TRL 1.16 plays environments one rollout at a time in two places:
`_generate_and_score_completions` calls `environment.reset(**row)` for each row in turn, and
`_tool_call_loop` calls each completion's tools in turn (`for idx in range(len(idxs_with_tool))`;
even async tools are awaited one completion at a time). Each call plays an executor game, so a
step waits for rollouts x positions games back to back. The alternatives:
* `rollout_func` replaces generation wholesale: skillos would re-implement TRL's multi-turn
  tokenisation, tool masks, truncation and vLLM paths to change one loop;
* the experimental AsyncGRPOTrainer needs FSDP2 and vLLM >= 0.22, none of which a CPU smoke
  run or a single-GPU run has;
* copying `_tool_call_loop` (250 lines) to change one `for` would fork TRL.
So `rollout_trainer` subclasses GRPOTrainer and wraps only those two methods, unchanged in
what they compute. The resets: the *first* `reset` TRL makes dispatches every row's reset at once
(a Batch), and TRL's own loop collects the answers in its own order. The tool rounds: when TRL
enters `_tool_call_loop`, each rollout is played ahead by a worker of its own
(training/curator/pipeline.py: its tool call, then its next turn generated as soon as its game ends, in
a batch with whatever other turns are waiting, then its next tool call), so no rollout waits for
a round; TRL's loop then runs unchanged and is handed each call's answer and each turn's tokens.
The results are the values the sequential loop computes, since each rollout owns its environment
and its game engine (ALFWorld's module-level state is guarded per engine call by
`evals.runner.ENGINE_LOCK`, which is what the eval harness does; the executor calls, where the
time goes, overlap). A call or turn TRL asks for that no round or worker foresaw is made on the
spot and counted: a TRL whose loop changed shape falls back to sequential, and the reward-health
line shows it (requests in flight max 1; "N environment calls made one at a time"). The wrapped
methods are checked against the installed TRL when the trainer is built (`check_trl`): a missing
method or a changed signature is a one-line SkillosError naming the TRL version, never a silent
sequential run.
`training.rollout_concurrency: 1` uses TRL's own loop, unwrapped.
"""

from __future__ import annotations

import contextvars
import functools
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from skillos.errors import SkillosError
from skillos.training.curator.pipeline import Pipeline, callable_with
from skillos.training.common import trl_compat

# The TRL methods the subclass wraps, with the parameters the wrappers rely on (checked by
# training/common/trl_compat.py, the one home of TRL's private API).
WRAPPED = ("_generate_and_score_completions", "_tool_call_loop", "_generate_single_turn", "_get_tool_suffix_ids")

_ACTIVE: contextvars.ContextVar["Batch | None"] = contextvars.ContextVar("skillos_rollout_batch", default=None)


# -- executor requests in flight ------------------------------------------------------------------
class InFlight:
    """A gauge of executor requests in flight: its peak and its time integral over a window,
    so a window's mean in flight is Little's L = (requests x latency) / window."""

    def __init__(self):
        self._lock = threading.Lock()
        self.now = 0
        self.requests = 0
        self._area = self._busy = 0.0
        self._since = time.perf_counter()
        self._window = None

    def _tick(self, t: float) -> None:
        dt = t - self._since
        self._area += self.now * dt
        self._busy += dt if self.now else 0.0
        self._since = t

    def enter(self) -> None:
        with self._lock:
            self._tick(time.perf_counter())
            self.now += 1
            self.requests += 1
            if self._window is not None:
                self._window["peak"] = max(self._window["peak"], self.now)

    def exit(self) -> None:
        with self._lock:
            self._tick(time.perf_counter())
            self.now -= 1

    def start(self) -> None:
        """Open a measurement window (the rollout phase of a step)."""
        with self._lock:
            t = time.perf_counter()
            self._tick(t)
            self._window = {"t": t, "area": self._area, "busy": self._busy, "requests": self.requests,
                            "peak": self.now}

    def stop(self) -> "Window":
        with self._lock:
            t = time.perf_counter()
            self._tick(t)
            w, self._window = self._window, None
        if w is None:
            raise RuntimeError("InFlight.stop without start")
        return Window(t - w["t"], self._area - w["area"], self._busy - w["busy"],
                      self.requests - w["requests"], w["peak"])


@dataclass
class Window:
    """What one window of the gauge saw."""

    seconds: float
    area: float  # request-seconds in flight
    busy: float  # seconds with at least one request in flight
    requests: int
    peak: int

    @property
    def mean(self) -> float | None:
        return self.area / self.seconds if self.seconds > 0 else None

    @property
    def mean_while_busy(self) -> float | None:
        return self.area / self.busy if self.busy > 0 else None


class MeteredExecutor:
    """An executor whose every action (one model request, two on a reformat retry) is counted
    in flight while it runs. Same episodes, same actions: it only watches."""

    def __init__(self, executor, gauge: InFlight):
        self.executor, self.gauge = executor, gauge
        self.name = getattr(executor, "name", type(executor).__name__)
        self.deterministic = getattr(executor, "deterministic", False)  # training/curator/plays.py may keep its plays

    def new_episode(self, task, skills):
        return _MeteredEpisode(self.executor.new_episode(task, skills), self.gauge)


class _MeteredEpisode:
    def __init__(self, episode, gauge: InFlight):
        self._episode, self._gauge = episode, gauge

    def act(self, observation, admissible):
        self._gauge.enter()
        try:
            return self._episode.act(observation, admissible)
        finally:
            self._gauge.exit()

    def __getattr__(self, name):  # the episode's own counters (reformats, steps) stay readable
        return getattr(self._episode, name)


# -- one round of environment calls, made at once -----------------------------------------------
def together(method):
    """Mark an environment method (reset, or a tool) whose calls TRL makes one rollout at a time:
    inside a Batch the first call of a round makes every call of the round at once."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        batch = _ACTIVE.get()
        if batch is None or args:
            return method(self, *args, **kwargs)
        return batch.call(self, method, kwargs)

    call.__skillos_together__ = method
    return call


class Batch:
    """The environment calls of one round, planned by `plan()` (-> [(key, env, name, kwargs)])
    and made on `pool` the first time TRL asks for one of them; each answer (or exception) is
    handed back when TRL asks for it, exactly once."""

    def __init__(self, plan, pool: ThreadPoolExecutor):
        self.plan, self.pool = plan, pool
        self.dispatched: set = set()
        self.answers: dict = {}  # (id(env), name) -> list of [kwargs, result, exception]
        self.unplanned = 0  # calls TRL made that no round foresaw (made on the spot)

    def call(self, env, method, kwargs):
        answer = self._take(env, method.__name__, kwargs)
        if answer is None:
            self._dispatch_round()
            answer = self._take(env, method.__name__, kwargs)
        if answer is None:
            self.unplanned += 1
            return method(env, **kwargs)
        _, result, error = answer
        if error is not None:
            raise error
        return result

    def _take(self, env, name, kwargs):
        queue = self.answers.get((id(env), name))
        if queue and queue[0][0] == kwargs:
            return queue.pop(0)
        return None

    def _dispatch_round(self) -> None:
        work = [(key, env, name, kwargs) for key, env, name, kwargs in self.plan() if key not in self.dispatched]
        self.dispatched.update(key for key, *_ in work)
        answers = {}
        for (_, env, name, _), answer in zip(work, self.pool.map(_make_call, work)):
            answers.setdefault((id(env), name), []).append(answer)
        self.answers = answers  # a new round: what the last one left unasked is dropped


def _make_call(item):
    _, env, name, kwargs = item
    method = getattr(type(env), name).__skillos_together__
    try:
        return [kwargs, method(env, **kwargs), None]
    except Exception as exc:  # noqa: BLE001 - handed to TRL, which records a tool error as it would
        return [kwargs, None, exc]


def reset_plan(trainer, inputs):
    """TRL resets `trainer.environments[i]` with row `inputs[i]`, in order."""

    def plan():
        envs = getattr(trainer, "environments", None) or []
        return [(("reset", i), env, "reset", row) for i, (env, row) in enumerate(zip(envs, inputs))
                if callable_with(env, "reset", row)]

    return plan


def tool_plan(trainer, completions):
    """The round's tool calls: every completion whose newest message is an assistant turn with
    tool calls not yet dispatched. TRL calls them in this round, in order, with
    `**function["arguments"]`."""

    def plan():
        envs = getattr(trainer, "environments", None) or []
        work = []
        for env, messages in zip(envs, completions):
            last = messages[-1] if messages else None
            if not isinstance(last, dict) or last.get("role") != "assistant" or not last.get("tool_calls"):
                continue
            for n, tool_call in enumerate(last["tool_calls"]):
                if tool_call.get("type") != "function":
                    continue
                function = tool_call.get("function") or {}
                name, kwargs = function.get("name"), function.get("arguments")
                if callable_with(env, name, kwargs):
                    work.append(((id(last), n), env, name, kwargs))
        return work

    return plan


# -- the trainer -------------------------------------------------------------------------------
def check_trl(trainer_cls=None) -> None:
    """The TRL methods `rollout_trainer` wraps exist with the parameters it relies on; else a one-line
    error that says how to run TRL's own loop instead."""
    try:
        trl_compat.check(trainer_cls, WRAPPED)
    except SkillosError as exc:
        raise SkillosError(f"{exc}; set training.rollout_concurrency: 1 for TRL's own loop") from None


def rollout_trainer(concurrency: int | None, gauge: InFlight | None = None, base=None, on_done=None):
    """A GRPOTrainer subclass whose environment calls of a round run at once on up to
    `concurrency` threads (None: every rollout of the round; 1: TRL's own loop). With `gauge`,
    each rollout phase (one `_generate_and_score_completions`: resets, generation with its tool
    rounds, the reward's finishing plays) is a window appended to `trainer.rollout_windows` as
    (Window, calls made outside a planned round). The tool rounds are played ahead per rollout
    (training/curator/pipeline.py; `on_done(env)` runs when a rollout has nothing left for TRL to call).
    Checked against the installed TRL first."""
    if base is None:
        from trl import GRPOTrainer as base
    check_trl(base)

    class ConcurrentRolloutTrainer(base):
        rollout_windows: list

        def _pool(self, n: int) -> ThreadPoolExecutor:
            workers = max(1, min(n, concurrency or n))
            pool = getattr(self, "_skillos_pool", None)
            if pool is None or pool._max_workers < workers:
                if pool is not None:
                    pool.shutdown(wait=True)
                pool = self._skillos_pool = ThreadPoolExecutor(workers, thread_name_prefix="skillos-rollout")
            return pool

        def _generate_and_score_completions(self, inputs):
            if gauge is not None:
                gauge.start()
            batch = Batch(reset_plan(self, inputs), self._pool(len(inputs))) if concurrency != 1 else None
            token = _ACTIVE.set(batch)
            try:
                return super()._generate_and_score_completions(inputs)
            finally:
                unplanned = batch.unplanned if batch is not None else 0
                _ACTIVE.reset(token)
                if gauge is not None:
                    window = gauge.stop()
                    unplanned += getattr(self, "_tool_unplanned", 0)
                    self.__dict__.setdefault("rollout_windows", []).append((window, unplanned))
                self._tool_unplanned = 0

        def _tool_call_loop(self, prompts, prompt_ids, completion_ids, completions, logprobs, images,
                            multimodal_fields):
            if concurrency == 1 or images is not None:  # TRL's own loop, one completion's tools after another
                return super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, logprobs, images,
                                               multimodal_fields)
            lock = self.__dict__.setdefault("_skillos_generate_lock", threading.Lock())
            pipeline = Pipeline(self, prompt_ids, completion_ids, completions, self._pool(len(completions)),
                                base._generate_single_turn, lock, on_done)
            token = _ACTIVE.set(pipeline)
            try:
                return super()._tool_call_loop(prompts, prompt_ids, completion_ids, completions, logprobs, images,
                                               multimodal_fields)
            finally:
                _ACTIVE.reset(token)
                pipeline.close()
                self._tool_unplanned = getattr(self, "_tool_unplanned", 0) + pipeline.unplanned + pipeline.failed

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations,
                                  has_tool_images=False):
            pipeline = _ACTIVE.get()
            if not hasattr(pipeline, "generated") or num_generations != 1 or images is not None:
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                     has_tool_images)
            made = [pipeline.generated(ids) for ids in prompt_ids]
            missing = [n for n, m in enumerate(made) if m is None]
            if missing:  # turns no worker foresaw: generated here, as TRL would, and counted
                pipeline.unplanned += len(missing)
                with self._skillos_generate_lock:
                    ids, lps = super()._generate_single_turn([prompt_ids[n] for n in missing], images,
                                                             multimodal_fields, num_generations, has_tool_images)
                for k, n in enumerate(missing):
                    made[n] = (ids[k], None if lps is None else lps[k])
            logprobs = None if any(lp is None for _, lp in made) else [lp for _, lp in made]
            return [list(ids) for ids, _ in made], logprobs

    ConcurrentRolloutTrainer.__doc__ = __doc__
    return ConcurrentRolloutTrainer


def phase_stats(windows: list, step_seconds: float | None, waited: float | None = None) -> dict:
    """Executor requests in flight over a step's rollout phase(s) and that phase's share of the
    step; None where nothing measured it. `waited`: the phase was played ahead, beside the step
    before (training/curator/async_rollouts.py), and this step waited that long for it: its share is the wait's."""
    seconds = sum(w.seconds for w, _ in windows)
    area = sum(w.area for w, _ in windows)
    if waited is not None and windows and step_seconds:
        share = waited / step_seconds
    else:
        share = seconds / step_seconds if windows and step_seconds else None
    return {"rollout_seconds": seconds if windows else None, "step_seconds": step_seconds, "waited_seconds": waited,
            "requests": sum(w.requests for w, _ in windows) if windows else None,
            "in_flight_mean": area / seconds if seconds else None,
            "in_flight_max": max(w.peak for w, _ in windows) if windows else None,
            "busy_seconds": sum(w.busy for w, _ in windows) if windows else None,  # >= 1 request out
            "rollout_share": share,
            "unplanned_calls": sum(n for _, n in windows)}


def phase_line(stats: dict) -> str:
    """The clause the reward-health line ends with."""
    if stats["rollout_seconds"] is None:
        return "executor requests in flight unmeasured (no rollout phase in this step)"
    if stats["requests"]:
        text = (f"executor requests in flight mean {stats['in_flight_mean']:.1f} max {stats['in_flight_max']} "
                f"({stats['requests']} requests in {stats['rollout_seconds']:.1f} s)")
    else:
        text = "executor requests in flight: none made"
    if stats["unplanned_calls"]:
        text += f", {stats['unplanned_calls']} environment calls made one at a time outside a round"
    if stats["rollout_share"] is not None and stats.get("waited_seconds") is not None:
        text += (f"; rollout phase played ahead beside the step before, this step waited {stats['waited_seconds']:.1f} "
                 f"s for it ({stats['rollout_share']:.0%} of the step's {stats['step_seconds']:.1f} s)")
    elif stats["rollout_share"] is not None:
        text += (f"; rollout phase {stats['rollout_share']:.0%} of the step "
                 f"({stats['rollout_seconds']:.1f} s of {stats['step_seconds']:.1f} s)")
    else:
        text += "; rollout share of the step unmeasured"
    return text
