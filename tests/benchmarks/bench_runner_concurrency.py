"""Episodes per second of the runner against a local OpenAI-compatible server with a fixed
latency, at concurrency 1, 16 and 64, beside the Little's-law limit
concurrency / (steps x latency). The goal is >= 0.9 of the limit at 64.

Run by hand: `python tests/benchmarks/bench_runner_concurrency.py [latency_s] [steps]`. The
game is a stand-in with exactly `steps` turns and no engine work, so the number measures the
runner, the LLM executor and the SDK, not ALFWorld; the endpoint runs in its own process.

Measured on 2 cores: at 1 s latency and 5 steps, 0.99 / 0.97 / 0.94 of the limit at 1 / 16 / 64.
At 100 ms and 10 steps (640 calls/s asked at 64) it was ~0.3: a TCP connection per call (the
endpoint spoke HTTP/1.0) and the SDK's typed transform and parse. With keep-alive and the reply
read as JSON (evals/backends/openai_chat.py): 0.97 / 0.96 / 0.92 on idle cores.
"""

import multiprocessing
import os
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/llm_server.py

from llm_server import ScriptedLLM  # noqa: E402

from skillos.config import BackendConfig  # noqa: E402
from skillos.evals.envs.household.llm import LLMExecutor  # noqa: E402
from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame  # noqa: E402
from skillos.evals.runner import run_arm  # noqa: E402


def always_wait(messages):
    return "<action>wait</action>"


def serve(latency: float, ports) -> None:
    """The endpoint, in its own process: it must not share the runner's interpreter lock."""
    with ScriptedLLM(always_wait) as server:
        server.latency_s = latency
        ports.put(server.openai_url)
        threading.Event().wait()


def main():
    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.1
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    ports = multiprocessing.Queue()
    endpoint = multiprocessing.Process(target=serve, args=(latency, ports), daemon=True)
    endpoint.start()
    url = ports.get(timeout=30)
    try:
        executor = LLMExecutor(BackendConfig(backend="openai", model="bench", base_url=url,
                                             history_length=3, max_retries=0, timeout_s=30))
        for concurrency in (1, 16, 64):
            games = [ScriptedGame(f"g{i}") for i in range(max(4, 3 * concurrency))]
            start = time.perf_counter()
            never_wins = ScriptedEnv(("wait", "look"), win_action=None)
            rows = run_arm("bench", games, env=never_wins,
                           make_env=lambda: ScriptedEnv(("wait", "look"), win_action=None), executor=executor,
                           repo=None, max_steps=steps, top_k=0, retrieval_mode="bm25", concurrency=concurrency,
                           wave_size=1)
            elapsed = time.perf_counter() - start
            lost = [r["unmeasured_reason"] for r in rows if r["unmeasured"]]
            if lost:
                print(f"concurrency {concurrency}: {len(lost)} episodes unmeasured, e.g. {lost[0]}")
            rate, limit = len(rows) / elapsed, concurrency / (steps * latency)
            print(f"concurrency {concurrency:3d}: {rate:6.2f} episodes/s, Little's-law limit "
                  f"{limit:6.2f} -> {rate / limit:.2f} of the limit ({len(rows)} episodes, "
                  f"{steps} steps, {1000 * latency:.0f} ms latency)")
    finally:
        endpoint.terminate()


if __name__ == "__main__":
    main()
