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
(training/pipeline.py; 0 means every rollout's first turn carried no parseable call, so the
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

Run by hand: `python tests/benchmarks/bench_grpo_rollouts.py [rollouts] [latency_s] [max_steps]
[sequential_rollouts] [canary_warm_start]` (defaults 32, 0.2, 30, 8, none: the sequential path
takes rollouts x |G| x max_steps x latency, so it runs fewer rollouts; its ratio does not depend
on how many).
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
import json, sys
from skillos import config as cfgmod
from skillos.training import pipeline
from skillos.training.trainer import train

turns = []  # the play-ahead workers' turns: each follows a tool call
submit = pipeline.Batcher.submit
pipeline.Batcher.submit = lambda self, ids: (turns.append(1), submit(self, ids))[1]

cfg = cfgmod.load({config!r}, {sets!r})
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

def rollout(i):
    env = domain.make_env(games)
    return sum(len(play(env, executor, None, g, cfg.env.max_steps, 0).steps) for g in groups[(i // 2) % len(groups)])

wall, cpu = time.perf_counter(), time.process_time()
with ThreadPoolExecutor({rollouts}) as pool:
    requests = sum(pool.map(rollout, range({rollouts})))
print(json.dumps({{"seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu,
                  "requests": requests}}))
"""


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
         temperature: float = None, completion: int = None, model: str = ""):
    """One GRPO step: the smoke config (its warm-up copied from `warm`), or with `model` (the
    curator canary's warm start) the canary's config from that model."""
    out = work / name
    if warm is not None and not model:
        shutil.copytree(warm, out / "warmup")
    code = STEP.format(config=str(CANARY if model else SMOKE), model=model, canary_completion=CANARY_COMPLETION,
                       out=str(out), rollouts=rollouts, concurrency=concurrency,
                       sets=executor_sets(url, max_steps), temperature=TEMPERATURE if temperature is None else temperature,
                       completion=COMPLETION if completion is None else completion)
    env = {**os.environ, "OPENAI_API_KEY": "bench", "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"{name}: the step failed:\n{done.stderr[-3000:]}")
    health = [line for line in done.stderr.splitlines() if line.startswith("reward health:")]
    return json.loads(done.stdout.strip().splitlines()[-1])[0], health[0], out / "warmup"


def play_only(url: str, rollouts: int, max_steps: int, latency: float, config: Path = SMOKE) -> None:
    code = PLAY.format(config=str(config), sets=executor_sets(url, max_steps), rollouts=rollouts)
    env = {**os.environ, "OPENAI_API_KEY": "bench"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if done.returncode:
        raise SystemExit(f"play only: failed:\n{done.stderr[-3000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    floor = r["requests"] * latency / rollouts
    print(f"{'play only':10s}: {rollouts} rollouts' games, no trainer or model: {r['requests']} executor requests in "
          f"{r['seconds']:.1f} s ({r['requests'] / r['seconds']:.0f}/s) -> {floor / r['seconds']:.2f} of the "
          f"limit; {1000 * r['cpu_seconds'] / r['requests']:.1f} ms CPU per request in the process "
          f"({r['cpu_seconds'] / r['seconds']:.2f} cores)")


def report(name: str, rollouts: int, concurrency, latency: float, record: dict) -> None:
    phase = record["phase"]
    limit = min(rollouts, concurrency or rollouts)
    seconds, requests, busy = phase["rollout_seconds"], phase["requests"], phase["busy_seconds"]
    floor = requests * latency / limit  # Little's law: the wall time with `limit` requests always out
    print(f"{name:10s}: {rollouts} rollouts/step, {requests} executor requests, in flight max "
          f"{phase['in_flight_max']} mean {phase['in_flight_mean']:.2f}; rollout phase {seconds:.1f} s "
          f"({phase['rollout_share']:.0%} of a {phase['step_seconds']:.1f} s step), {busy:.1f} s with a "
          f"request out; Little's-law limit {limit} in flight = {floor:.1f} s -> {floor / seconds:.2f} of the "
          f"limit over the phase, {floor / busy:.2f} while requests are out; {record.get('turns_after_calls', 0)} "
          "curator turns generated after a tool call")


def main():
    rollouts = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    latency = float(sys.argv[2]) if len(sys.argv) > 2 else 0.2
    max_steps = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    sequential_rollouts = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    model = str(Path(sys.argv[5]).resolve()) if len(sys.argv) > 5 else ""
    work = Path(tempfile.mkdtemp(prefix="bench-grpo-"))
    fast, fast_url = endpoint(0.0)  # the warm-up reads real first inputs: no need to wait for them
    slow, url = endpoint(latency)
    try:
        warm = None if model else step(work, "warm", fast_url, 2, None, max_steps, None)[2]
        print(f"{latency * 1000:.0f} ms per executor request, env.max_steps {max_steps}, "
              f"{'the curator canary from ' + model + ', |G| 2' if model else 'the smoke config, |G| 3'}, "
              f"{os.cpu_count()} cores")
        concurrent, line, _ = step(work, "concurrent", url, rollouts, None, max_steps, warm, model=model)
        report("concurrent", rollouts, None, latency, concurrent)
        print(f"  {line}")
        play_only(url, rollouts, max_steps, latency, CANARY if model else SMOKE)
        sequential, line, _ = step(work, "sequential", url, sequential_rollouts, 1, max_steps, warm, model=model)
        report("sequential", sequential_rollouts, 1, latency, sequential)
        print(f"  {line}")
    finally:
        fast.terminate()
        slow.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
