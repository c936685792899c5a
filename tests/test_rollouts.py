"""Concurrent GRPO rollouts (training/curator/rollouts.py): the calls TRL makes one rollout at a time run
at once, with the same results; the TRL internals wrapped are checked against the installed TRL;
(slow) a real GRPO step on the CPU smoke config with a delayed HTTP executor keeps >= 6 of 8
executor requests in flight and gives the sequential run's rollout rows and health line."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import ROOT

SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"


class SlowExecutor:
    """The heuristic executor, each action taking `delay` seconds (a remote model's latency)."""

    def __init__(self, delay):
        from skillos.evals.envs.household.heuristic import HeuristicExecutor

        self.inner, self.delay, self.name = HeuristicExecutor(), delay, "slow"

    def new_episode(self, task, skills):
        episode, delay = self.inner.new_episode(task, skills), self.delay

        class Slow:
            def act(self, observation, admissible):
                time.sleep(delay)
                return episode.act(observation, admissible)

        return Slow()


def _setup(gauge, delay=0.02):
    from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
    from skillos.training.curator.env import Setup
    from skillos.training.curator.rollouts import MeteredExecutor

    games = {g.id: g for g in [ScriptedGame(f"g{i}") for i in range(3)] + [ScriptedGame("lost", path="missing")]}
    return Setup(games, MeteredExecutor(SlowExecutor(delay), gauge), lambda: ScriptedEnv(("look", "wait"), None),
                 group_size=3, max_steps=4, top_k=5, retrieval_mode="bm25")


def _play_like_trl(envs, rows, ops, batch_for=None):
    """TRL 1.16's order: reset every rollout in turn, then each round, each completion's tool in
    turn. Under `batch_for(kind, completions)` the first call of a round makes all of them."""
    from skillos.training.curator.rollouts import _ACTIVE

    class Trainer:
        environments = envs

    texts = []
    token = _ACTIVE.set(batch_for("reset", Trainer, rows) if batch_for else None)
    texts += [env.reset(**row) for env, row in zip(envs, rows)]
    _ACTIVE.reset(token)
    for round_ops in ops:
        completions = [[{"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "curate_and_advance", "arguments": {"operations": o}}}]}]
            for o in round_ops]
        token = _ACTIVE.set(batch_for("tools", Trainer, completions) if batch_for else None)
        for env, messages in zip(envs, completions):
            call = messages[-1]["tool_calls"][0]["function"]
            texts.append(getattr(env, call["name"])(**call["arguments"]))
            messages.append({"role": "tool", "content": texts[-1]})
        _ACTIVE.reset(token)
    return texts


def test_a_round_of_calls_runs_at_once_with_the_sequential_results():
    from concurrent.futures import ThreadPoolExecutor

    from skillos.training.curator.env import CuratorEnv, finish
    from skillos.training.curator.rollouts import Batch, InFlight, reset_plan, tool_plan

    n = 6
    rows = [{"group": i, "game_ids": ["g0", "g1", "g2"]} for i in range(n - 1)] + [{"group": 9, "game_ids": ["lost"] * 3}]
    ops = [[[{"op": "insert", "skill_name": f"skill-{i}", "content": "Look first\nThen wait."}] for i in range(n)],
           [[{"op": "delete", "skill_name": f"skill-{i}"}] if i % 2 else [] for i in range(n)]]
    results = {}
    for mode in ("sequential", "batched"):
        gauge = InFlight()
        envs = [CuratorEnv(_setup(gauge)) for _ in range(n)]
        pool = ThreadPoolExecutor(n)
        plans = {"reset": reset_plan, "tools": tool_plan}
        batch_for = (lambda kind, trainer, items: Batch(plans[kind](trainer, items), pool)) if mode == "batched" else None
        gauge.start()
        texts = _play_like_trl(envs, rows, ops, batch_for)
        window = gauge.stop()
        results[mode] = (texts, [finish(e) for e in envs], window)
    (seq_texts, seq_rollouts, seq), (texts, rollouts, batched) = results["sequential"], results["batched"]
    assert texts == seq_texts and rollouts == seq_rollouts  # same inputs, positions, ops, words
    assert rollouts[-1].positions == [None, None, None]  # a lost game stays unmeasured in a batch too
    assert seq.peak == 1 and batched.peak == n - 1  # the lost rollout makes no executor request
    assert batched.requests == seq.requests and batched.seconds < seq.seconds / 2


def test_a_call_no_round_foresaw_is_made_on_the_spot_and_counted():
    from concurrent.futures import ThreadPoolExecutor

    from skillos.training.curator.env import CuratorEnv
    from skillos.training.curator.rollouts import _ACTIVE, Batch, InFlight

    env = CuratorEnv(_setup(InFlight()))
    batch = Batch(lambda: [], ThreadPoolExecutor(1))
    token = _ACTIVE.set(batch)
    try:
        assert env.reset(game_ids=["g0", "g1", "g2"]).startswith("Task 1 of 3:")
    finally:
        _ACTIVE.reset(token)
    assert batch.unplanned == 1


def test_the_wrapped_trl_methods_are_checked_against_the_installed_trl():
    from importlib.metadata import version

    from trl import GRPOTrainer

    from skillos.errors import SkillosError
    from skillos.training.curator.rollouts import check_trl, rollout_trainer

    check_trl(GRPOTrainer)  # the installed TRL has both, with the parameters the wrappers pass on
    assert issubclass(rollout_trainer(None, base=GRPOTrainer), GRPOTrainer)

    class Missing(GRPOTrainer):
        _tool_call_loop = None

    class Changed(GRPOTrainer):
        def _tool_call_loop(self, prompts, prompt_ids, completion_ids, completions, logprobs, images):
            pass

    for base, what in ((Missing, "GRPOTrainer._tool_call_loop is missing"), (Changed, "_tool_call_loop(self, prompts")):
        with pytest.raises(SkillosError) as caught:
            rollout_trainer(None, base=base)
        message = str(caught.value)
        assert what in message and f"trl {version('trl')}" in message and "\n" not in message


def test_the_health_line_reports_requests_in_flight_and_the_rollout_share():
    from skillos.training.curator.rollouts import Window, phase_line, phase_stats

    stats = phase_stats([(Window(4.0, 20.0, 3.0, 100, 8), 0)], step_seconds=5.0)
    assert stats["in_flight_mean"] == 5.0 and stats["in_flight_max"] == 8 and stats["rollout_share"] == 0.8
    line = phase_line(stats)
    assert "executor requests in flight mean 5.0 max 8 (100 requests in 4.0 s)" in line
    assert "rollout phase 80% of the step (4.0 s of 5.0 s)" in line
    nothing = phase_stats([], 5.0)
    assert nothing["in_flight_mean"] is None and "unmeasured" in phase_line(nothing)


RUN = """
import json, sys
sys.path.insert(0, {tests!r})
from llm_server import ScriptedLLM
from skillos import config as cfgmod
from skillos.training.curator.trainer import train

cfg = cfgmod.load({smoke!r})
t = cfg.training
t.output_dir, t.max_steps, t.save_steps = {out!r}, 1, 10
t.num_generations, t.generation_batch_size, t.per_device_train_batch_size = 2, 8, 8  # 8 rollouts
t.rollout_concurrency = {concurrency!r}
cfg.env.max_steps = 5
with ScriptedLLM() as server:
    server.latency_s = 0.05
    cfg.executor.backend, cfg.executor.model, cfg.executor.base_url = "openai", "executor", server.openai_url
    summary = train(cfg, None, echo=lambda line: print(line, file=sys.stderr))
print(json.dumps(summary["steps"]))
"""


@pytest.mark.slow
@pytest.mark.alfworld
def test_a_grpo_step_keeps_every_rollout_in_flight_with_the_sequential_rows(tmp_path, game_cache):
    """8 rollouts, an HTTP executor answering after 50 ms: TRL's own loop has 1 request in flight
    at most; the concurrent one >= 6, and every rollout's positions, operations and reward, and
    the health line, are the same. The warm-up is made once and shared."""
    env = {**os.environ, "OPENAI_API_KEY": "k", "HF_HUB_OFFLINE": "1", "SKILLOS_CACHE": str(game_cache)}
    steps = {}
    for concurrency in (None, 1):
        out = tmp_path / f"run-{concurrency}"
        if concurrency == 1:
            shutil.copytree(tmp_path / "run-None" / "warmup", out / "warmup")
        code = RUN.format(tests=str(ROOT / "tests"), smoke=str(SMOKE), out=str(out), concurrency=concurrency)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        steps[concurrency] = json.loads(done.stdout.strip().splitlines()[-1])
        health = [line for line in done.stderr.splitlines() if line.startswith("reward health:")]
        assert len(health) == 1 and "over 8 rollouts" in health[0]
        assert "executor requests in flight mean" in health[0] and "of the step" in health[0]
        if concurrency == 1:  # TRL's own loop shows itself in the first step's log
            assert " max 1 (" in health[0]
    (concurrent,), (sequential,) = steps[None], steps[1]
    assert sequential["phase"]["in_flight_max"] == 1
    assert concurrent["phase"]["in_flight_max"] >= 6, concurrent["phase"]
    assert concurrent["rollouts"] == sequential["rollouts"] and len(concurrent["rollouts"]) == 8
    assert concurrent["line"] == sequential["line"]
    # the turn after the last position is left out of the loss the same way by either loop (training/curator/masks.py)
    assert concurrent["left_out"] is not None and concurrent["left_out"] == sequential["left_out"]
    assert sum(r["ops_total"] for r in concurrent["rollouts"]) > 0  # the tool rounds ran, not only resets
