"""Every script in tests/benchmarks/ runs (class 8 of issue 24: the retrieval benchmark had
stopped running when Retriever gained its mode). The cheap ones run in the default suite on a
small workload; the ones that train or play a quickstart run in the slow step. A benchmark that
misses its speed target still exits 0: this checks that it runs, not how fast the machine is."""

import subprocess
import sys

import pytest

from conftest import ROOT

BENCH = ROOT / "tests" / "benchmarks"
QUICK = {  # script -> small arguments
    "bench_retrieval.py": ["200"],
    "bench_ledger_reads.py": ["2000"],
    "bench_sleep_harvest.py": ["20", "10"],
    "bench_runner_concurrency.py": ["0.005", "2"],
    "bench_gate_check.py": [str(ROOT / "evals" / "configs" / "quickstart.yaml"), "--repeats", "1"],
    "bench_windowed_attention.py": ["200", "1", "2", "16"],
}
SLOW = {
    "bench_alfworld_engine.py": ["1", "3"],
    "bench_game_reload.py": ["1", "2"],
    "bench_quickstart.py": ["1"],  # one run: that it runs (by hand it times a second, cached one)
    "bench_grpo_rollouts.py": ["2", "0.01", "3", "2", "-", "2", "1"],
    "bench_ray_sweep.py": ["2", "1", "1"],
    "bench_async_rollouts.py": ["3", "2", "0.01", "3"],
    "bench_turn_after_last.py": ["2", "1", "-", "env.n_games=12", "env.n_train_games=40", "canary.warmup_steps=20",
                                 "canary.warmup_groups=4", "canary.warmup_draws=1"],
}


def test_every_benchmark_is_listed_here():
    assert {p.name for p in BENCH.glob("bench_*.py")} == set(QUICK) | set(SLOW)


def _run(name, args):
    result = subprocess.run([sys.executable, str(BENCH / name), *args], capture_output=True, text=True,
                            timeout=1500, cwd=ROOT)
    assert result.returncode == 0 and "Traceback" not in result.stderr, (name, result.stderr[-3000:])
    assert result.stdout.strip(), name  # it printed its measurement


@pytest.mark.parametrize("name", QUICK)
def test_a_benchmark_runs(name):
    _run(name, QUICK[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_a_heavy_benchmark_runs(name, game_cache):
    _run(name, SLOW[name])
