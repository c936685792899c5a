"""Executor requests in flight during one GRPO step of the tiny CPU curator, against Little's law.

One step of `skillos train` on the CPU smoke config (real ALFWorld games, the real trainer),
with the LLM executor (`executor.backend: openai`, the real SDK) calling a local OpenAI-protocol
endpoint, in its own process, that answers after a set latency. For the concurrent path (every
rollout in flight, the default) and for TRL's own one-at-a-time loop (`rollout_concurrency: 1`)
it prints rollouts per step, the max and mean requests in flight over the rollout phase, the
rollout phase's wall time, the Little's-law limit (L = requests in flight = min(rollouts,
concurrency); the mean L over the phase is requests x latency / wall time) and the ratio. The
ratio "while busy" leaves out the moments with no request in flight (the curator generating
between rounds), i.e. it measures the dispatch, not the model.

It also counts the curator turns with a tool call that the play-ahead workers generated
(training/curator/pipeline.py; 0 means every rollout's first turn carried no parseable call, so the
step played its games in the reward's finishing plays and the tool loop never ran), and it
plays the same number of rollouts' games (|G| games each, two rollouts per group) with the same
executor, engine and endpoint and no trainer or model at all: what the executor and the engine
reach on this machine, the ceiling the step's ratio is read against, with the CPU seconds one
executor request costs in that process (engine, prompt, SDK; the endpoint's own process aside).

With a fifth argument, the warm start of the curator canary (`skillos canary curator`'s
OUT/warm, which writes a well-formed call in 80 of 80 samples at T 1.0), the step runs the
canary's config (heat and cool tasks, |G| 2) from that model at its own temperature, with
max_completion_length 1500 (CANARY_COMPLETION) so that a tool result, the game's text, fits
(at the canary's 200 TRL drops it and ends the rollout after its call): its turns carry calls,
so the play-ahead workers play them and generate the turn after each.

The engine in worker processes (issue 47, evals/envs/alfworld/pool.py): the play-only ceiling is
measured in-process (1 worker: the interpreter) and with the engine in a pool of N workers,
alternating, `repeats` times each (the median printed, every run listed), with the speed-up
from 1 to N (target >= 1.6x at 2 workers on 2 idle cores); the concurrent step runs once
in-process and once with the pool (env.engine_workers), each read against its ceiling
(target >= 0.9). Each step also prints the CPU its rollout phase used on the whole machine
(/proc/stat: the trainer, the workers, the endpoint, and anything else running), the ratio the
step could reach at that CPU with every core busy, and the cores the 0.9 target would keep busy for
the whole phase: near or above the machine's cores, overlap alone cannot reach it.

Run by hand: `python tests/benchmarks/bench_grpo_rollouts.py [rollouts] [latency_s] [max_steps]
[sequential_rollouts] [canary_warm_start or -] [engine_workers] [repeats]` (defaults 32, 0.2,
30, 8, none, 2, 3: the sequential path takes rollouts x |G| x max_steps x latency, so it runs
fewer rollouts, its ratio does not depend on how many; 0 skips it).
"""

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Sampled at the smoke run's T 1.0 the warmed tiny model's first turn carried no parseable call in
# 32 of 32 rollouts; near-greedily it does not either (0 turns after a call, the count printed), so
# the tool loop never runs here: the bench measures the executor side. A well-formed call is ~60
# tokens; the cap bounds a garbled turn.
TEMPERATURE, COMPLETION = 0.05, 128
CANARY_COMPLETION = 1500  # the canary's own 200 is shorter than a tool result
sys.path.insert(0, str(ROOT / "tests"))  # llm_server.py
# The executor both the step and the play-only run use: the real SDK against the endpoint URL.
EXECUTOR = ["executor.backend=openai", "executor.model=executor", "executor.max_retries=0", "executor.timeout_s=60"]


def executor_sets(url: str, max_steps: int) -> list[str]:
    return EXECUTOR + [f"executor.base_url={url}", f"env.max_steps={max_steps}"]


STEP = """
import json, os, sys
from skillos import config as cfgmod
from skillos.training.curator import pipeline
from skillos.training.curator.trainer import train

turns = []  # the play-ahead workers' turns: each follows a tool call
submit = pipeline.Batcher.submit
pipeline.Batcher.submit = lambda self, ids: (turns.append(1), submit(self, ids))[1]

# The whole machine's busy CPU over the rollout phase (every process: the trainer, the engine
# workers, the endpoint), read from /proc/stat as the gauge opens and closes the phase's window.
from skillos.training.curator import rollouts
busy = []
def cpu_busy():
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    # user nice system irq softirq steal: all but idle and iowait (guest time is inside user already)
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")
start, stop = rollouts.InFlight.start, rollouts.InFlight.stop
rollouts.InFlight.start = lambda self: (busy.append(-cpu_busy()), start(self))[1]
rollouts.InFlight.stop = lambda self: (busy.append(cpu_busy()), stop(self))[1]

cfg = cfgmod.load({config!r}, {sets!r} + ["env.engine_workers={engine_workers}"])  # 0: in-process
t = cfg.training
t.output_dir, t.max_steps, t.save_steps = {out!r}, 1, 10
t.num_generations, t.generation_batch_size, t.per_device_train_batch_size = 2, {rollouts}, {rollouts}
t.rollout_concurrency = {concurrency!r}
if {model!r}:  # the canary's warm start at the canary's temperature
    t.model, t.max_completion_length = {model!r}, {canary_completion!r}
else:
    t.temperature, t.max_completion_length = {temperature!r}, {completion!r}
summary = train(cfg, None, echo=lambda line: print(line, file=sys.stderr), warmup=not {model!r})
summary["steps"][0]["turns_after_calls"] = len(turns)
summary["steps"][0]["phase_cpu_seconds"] = sum(busy) if busy and len(busy) % 2 == 0 else None
print(json.dumps(summary["steps"]))
"""

# The same rollouts' games with no trainer and no model: rollout i plays group i // 2's |G| games.
PLAY = """
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
from skillos import config as cfgmod
from skillos.evals.arms import load_games
from skillos.evals.envs.registry import environment
from skillos.evals.runner import play

cfg = cfgmod.load({config!r}, {sets!r})
games = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games)
domain, size = environment(cfg), cfg.training.group_size
executor = domain.make_executor(cfg.executor)
groups = [games[k:k + size] for k in range(0, len(games) - size + 1, size)]
pool = None
if {engine_workers!r}:  # the engine in worker processes, started (and timed) before the games
    from skillos.evals.envs.alfworld.pool import EnginePool
    started = time.perf_counter()
    pool = EnginePool({engine_workers!r})
    before = pool.stats()  # waits for every worker to start
    started = time.perf_counter() - started

def rollout(i):
    env = pool.make_env() if pool else domain.make_env(games)
    return sum(len(play(env, executor, None, g, cfg.env.max_steps, 0).steps) for g in groups[(i // 2) % len(groups)])

wall, cpu = time.perf_counter(), time.process_time()
with ThreadPoolExecutor({rollouts}) as pool_:
    requests = sum(pool_.map(rollout, range({rollouts})))
record = {{"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu, "requests": requests}}
if pool:
    after = pool.stats()
    record["worker_cpu_seconds"] = sum(a["cpu_seconds"] - b["cpu_seconds"] for a, b in zip(after, before))
    record["startup_seconds"] = started
    record["loads"], record["logic_hits"] = sum(a["loads"] for a in after), sum(a["logic_hits"] for a in after)
    pool.close()
print(json.dumps(record))
"""

# The targets (47): read against the numbers, not asserted (a benchmark, not a timed test).
TARGET_SPEEDUP_2 = 1.6  # the play-only ceiling from 1 to 2 workers, on 2 idle cores
TARGET_STEP_RATIO = 0.9  # the GRPO step's ratio to Little's law over the play-only ceiling's


def little_seconds(requests: int, latency: float, in_flight: int) -> float:
    """Little's law: the wall time of `requests` with `in_flight` of them always out."""
    return requests * latency / in_flight


def machine_cores() -> int:
    """The cores this process may run on (its affinity), which the benchmark's ratios are read against."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def serve(latency: float, ports) -> None:
    """The endpoint, in its own process: it must not share the trainer's interpreter lock."""
    from llm_server import ScriptedLLM

    with ScriptedLLM() as server:
        server.latency_s = latency
        ports.put(server.openai_url)
        threading.Event().wait()


def endpoint(latency: float):
    ports = multiprocessing.Queue()
    process = multiprocessing.Process(target=serve, args=(latency, ports), daemon=True)
    process.start()
    return process, ports.get(timeout=30)


SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"
CANARY = ROOT / "training" / "configs" / "canary-curator.yaml"


def step(work: Path, name: str, url: str, rollouts: int, concurrency, max_steps: int, warm: Path | None,
         temperature: float = None, completion: int = None, model: str = "", engine_workers: int = 0):
    """One GRPO step: the smoke config (its warm-up copied from `warm`), or with `model` (the
    curator canary's warm start) the canary's config from that model."""
    out = work / name
    if warm is not None and not model:
        shutil.copytree(warm, out / "warmup")
    code = STEP.format(config=str(CANARY if model else SMOKE), model=model, canary_completion=CANARY_COMPLETION,
                       out=str(out), rollouts=rollouts, concurrency=concurrency,
                       sets=executor_sets(url, max_steps), temperature=TEMPERATURE if temperature is None else temperature,
                       completion=COMPLETION if completion is None else completion, engine_workers=engine_workers)
    env = {**os.environ, "OPENAI_API_KEY": "bench", "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{name}: the step failed:\n{done.stderr[-3000:]}")
    health = [line for line in done.stderr.splitlines() if line.startswith("reward health:")]
    return json.loads(done.stdout.strip().splitlines()[-1])[0], health[0], out / "warmup"


def play_only(url: str, rollouts: int, max_steps: int, latency: float, config: Path = SMOKE,
              engine_workers: int = 0) -> dict:
    """One play-only run; its ratio to Little's law ("ceiling") and its record."""
    code = PLAY.format(config=str(config), sets=executor_sets(url, max_steps), rollouts=rollouts,
                       engine_workers=engine_workers)
    env = {**os.environ, "OPENAI_API_KEY": "bench"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"play only: failed:\n{done.stderr[-3000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    r["ceiling"] = little_seconds(r["requests"], latency, rollouts) / r["seconds"]
    return r


def play_only_line(label: str, rollouts: int, runs: list) -> dict:
    """The median run (by ceiling) of several, printed; returns it."""
    runs = sorted(runs, key=lambda r: r["ceiling"])
    r = runs[len(runs) // 2]
    cpu = r["cpu_seconds"] + r.get("worker_cpu_seconds", 0.0)
    extra = ""
    if "worker_cpu_seconds" in r:
        extra = (f" ({1000 * r['worker_cpu_seconds'] / r['requests']:.1f} ms in the workers; started in "
                 f"{r['startup_seconds']:.1f} s, not counted; {r['logic_hits']} of {r['loads']} loads from the "
                 "workers' parse cache)")
    print(f"{label:10s}: {rollouts} rollouts' games, no trainer or model: {r['requests']} executor requests in "
          f"{r['seconds']:.1f} s ({r['requests'] / r['seconds']:.0f}/s) -> {r['ceiling']:.2f} of the limit "
          f"(median of {len(runs)}: {', '.join('%.2f' % x['ceiling'] for x in runs)}); "
          f"{1000 * cpu / r['requests']:.1f} ms CPU per request in all processes{extra} "
          f"({cpu / r['seconds']:.2f} cores)")
    return r


def ratio(record: dict, rollouts: int, latency: float) -> float:
    """A step's ratio to Little's law over its rollout phase."""
    phase = record["phase"]
    return little_seconds(phase["requests"], latency, rollouts) / phase["rollout_seconds"]


def verdict(value: float, target: float) -> str:
    return f"target >= {target:g}: {'met' if value >= target else 'NOT met'}"


def report(name: str, rollouts: int, concurrency, latency: float, record: dict) -> None:
    phase = record["phase"]
    limit = min(rollouts, concurrency or rollouts)
    seconds, requests, busy = phase["rollout_seconds"], phase["requests"], phase["busy_seconds"]
    floor = little_seconds(requests, latency, limit)
    print(f"{name:10s}: {rollouts} rollouts/step, {requests} executor requests, in flight max "
          f"{phase['in_flight_max']} mean {phase['in_flight_mean']:.2f}; rollout phase {seconds:.1f} s "
          f"({phase['rollout_share']:.0%} of a {phase['step_seconds']:.1f} s step), {busy:.1f} s with a "
          f"request out; Little's-law limit {limit} in flight = {floor:.1f} s -> {floor / seconds:.2f} of the "
          f"limit over the phase, {floor / busy:.2f} while requests are out; {record.get('turns_after_calls', 0)} "
          "curator turns generated after a tool call")


def cpu_bound(record: dict, rollouts: int, latency: float, ceiling: float) -> str:
    """What the cores allow the step, if the CPU its rollout phase used (every process on the
    machine, spin-waits and contention included: whatever was busy) were the work to do: packed onto
    every core it is the shortest the phase can be, so with Little's law's wall time it bounds the
    share of the limit, and of the ceiling, the step can reach here; and the cores that reaching
    the target at that CPU would keep busy for the whole phase. One step, one sample (max_steps 1:
    every window in the process is this step's)."""
    phase, cpu = record["phase"], record.get("phase_cpu_seconds")
    if cpu is None:
        return "the phase's CPU: unmeasured (no /proc/stat, or the phase's window did not close)"
    cores = machine_cores()
    little = little_seconds(phase["requests"], latency, rollouts)
    best = little / max(little, cpu / cores)
    needed = cpu / (little / (TARGET_STEP_RATIO * ceiling))  # cores busy throughout a phase at the target
    return (f"the phase's CPU, every process: {cpu:.1f} core-seconds in {phase['rollout_seconds']:.1f} s "
            f"({cpu / phase['rollout_seconds']:.2f} of {cores} cores busy); on every core it takes >= "
            f"{cpu / cores:.1f} s, so at this CPU the step reaches at most {best:.2f} of the limit = "
            f"{best / ceiling:.2f} of the ceiling; {TARGET_STEP_RATIO:g} of the ceiling at this CPU would keep "
            f"{needed:.2f} of {cores} cores busy for the whole phase (one sample)")


def main():
    rollouts = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    max_steps = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    sequential_rollouts = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    model = str(Path(sys.argv[5]).resolve()) if len(sys.argv) > 5 and sys.argv[5] not in ("", "-") else ""
    workers = int(sys.argv[6]) if len(sys.argv) > 6 else 2
    repeats = int(sys.argv[7]) if len(sys.argv) > 7 else 3
    config = CANARY if model else SMOKE
    work = Path(tempfile.mkdtemp(prefix="bench-grpo-"))
    fast, fast_url = endpoint(0.0)  # the warm-up reads real first inputs: no need to wait for them
    slow, url = endpoint(latency)
    try:
        warm = None if model else step(work, "warm", fast_url, 2, None, max_steps, None)[2]
        print(f"{latency * 1000:.0f} ms per executor request, env.max_steps {max_steps}, "
              f"{'the curator canary from ' + model + ', |G| 2' if model else 'the smoke config, |G| 3'}, "
              f"{machine_cores()} cores (load average {os.getloadavg()[0]:.2f} before the runs); the engine "
              f"in-process and in {workers} worker processes")
        # the play-only ceiling, in-process (1 worker: the interpreter) and in the pool, runs alternating
        ceilings = {0: [], workers: []}
        for _ in range(repeats):
            for n in ceilings:
                ceilings[n].append(play_only(url, rollouts, max_steps, latency, config, n))
        one = play_only_line("play only", rollouts, ceilings[0])
        many = play_only_line(f"{workers} workers", rollouts, ceilings[workers])
        speedup = many["ceiling"] / one["ceiling"]
        print(f"  ceiling 1 -> {workers} workers: {one['ceiling']:.2f} -> {many['ceiling']:.2f} = {speedup:.2f}x "
              f"({verdict(speedup, TARGET_SPEEDUP_2) if workers == 2 else 'the target is stated for 2 workers'})")
        for n, label in ((0, "concurrent"), (workers, f"pool {workers}")):
            record, line, _ = step(work, f"concurrent-{n}", url, rollouts, None, max_steps, warm, model=model,
                                   engine_workers=n)
            report(label, rollouts, None, latency, record)
            print(f"  {line}")
            ceiling = (one if n == 0 else many)["ceiling"]
            r = ratio(record, rollouts, latency)
            print(f"  step / play-only ceiling ({'in-process' if n == 0 else f'{n} workers'}): {r:.2f} / "
                  f"{ceiling:.2f} = {r / ceiling:.2f} ({verdict(r / ceiling, TARGET_STEP_RATIO)})")
            print(f"  {cpu_bound(record, rollouts, latency, ceiling)}")
        if sequential_rollouts:
            sequential, line, _ = step(work, "sequential", url, sequential_rollouts, 1, max_steps, warm, model=model)
            report("sequential", sequential_rollouts, 1, latency, sequential)
            print(f"  {line}")
    finally:
        fast.terminate()
        slow.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
