"""The GPU check (tests/gpu/check.py) in CPU mode: it must keep running here so that it works on
the first GPU machine. Every CUDA item is skipped with its reason, nothing fails, the summary
has every item's fields, and bad input is one line with exit 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECK = ROOT / "tests" / "gpu" / "check.py"
CUDA_ITEMS = {"tiny_full_bf16", "tiny_lora_bf16_gc", "grpo_train_cuda", "selector_train_cuda",
              "hf_games_cuda", "accelerate_launch", "canary_curator_quick", "canary_selector_quick",
              "smollm2_games_cuda", "smollm2_grpo_lora_cuda"}


def test_budget_and_only(tmp_path):
    """A spent budget starts nothing (facts included); --only skips the rest with that reason."""
    proc = check(str(tmp_path), "--no-wheels", "--budget", "1", "--only", "stack")
    items = {i["name"]: i for i in json.loads((tmp_path / "summary.json").read_text())["items"]}
    assert proc.returncode == 0, proc.stderr
    assert items["facts"]["reason"] == items["stack"]["reason"] == "time budget"
    assert items["tiny_full_bf16"]["reason"] == "not in --only"
    assert all(i["status"] == "skipped" and i["wall_s"] is None for i in items.values())


def check(*args, env=None):
    return subprocess.run([sys.executable, str(CHECK), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env=env)


def test_cpu_mode_summary(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: the CUDA items would run (minutes), not skip")
    proc = check(str(tmp_path), "--no-wheels")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    items = {i["name"]: i for i in summary["items"]}
    assert set(items) == CUDA_ITEMS | {"facts", "wheels", "stack"}
    assert summary["cuda"] is False and "no GPU" in summary["no_cuda_reason"]
    assert summary["counts"] == {"pass": 2, "fail": 0, "skipped": 11}
    for name in CUDA_ITEMS:
        assert items[name]["status"] == "skipped" and items[name]["reason"].startswith("no CUDA: ")
    assert items["facts"]["status"] == items["stack"]["status"] == "pass"
    assert items["wheels"]["status"] == "skipped" and "--no-wheels" in items["wheels"]["reason"]
    for item in items.values():  # a missing measurement is None with its reason, never 0
        assert {"status", "reason", "wall_s", "peak_gpu_mb", "peak_gpu_reason"} <= set(item)
        assert item["peak_gpu_mb"] is None and item["peak_gpu_reason"]
        assert (item["wall_s"] is None) == (item["status"] == "skipped")
    assert 0 < summary["wall_s"] < summary["budget_s"]
    # one line an item on stdout, then the counts
    assert len(proc.stdout.strip().splitlines()) == len(items) + 1
    assert (tmp_path / "check.log").read_text().count("=====") >= 2


def test_the_real_model_items_say_when_the_model_is_not_here(tmp_path):
    """A CPU rehearsal of the real model's items where it is not fetched: skipped, saying why and how."""
    env = {**__import__("os").environ, "SKILLOS_CACHE": str(tmp_path / "empty-cache")}
    proc = check(str(tmp_path / "out"), "--no-wheels", "--on-cpu", "--only", "smollm2_games_cuda", env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    items = {i["name"]: i for i in json.loads((tmp_path / "out" / "summary.json").read_text())["items"]}
    assert items["smollm2_games_cuda"]["status"] == "skipped"
    assert "is not fetched here" in items["smollm2_games_cuda"]["reason"]
    assert "skillos models fetch smollm2-135m-instruct" in items["smollm2_games_cuda"]["reason"]
    assert items["smollm2_grpo_lora_cuda"]["reason"] == "not in --only"


@pytest.mark.parametrize("args, words", [
    ((), "no output folder"),
    (("{tmp}", "--wheels", "{tmp}/no-such-folder"), "no wheels in"),
    (("{tmp}", "--no-wheels", "--baseline", "{tmp}/missing.json"), "--baseline"),
    (("{tmp}", "--no-wheels", "--only", "stack,no_such_item"), "no item no_such_item"),
])
def test_bad_input_is_one_line(tmp_path, args, words):
    env = {k: v for k, v in __import__("os").environ.items() if k != "OUT"}
    proc = check(*(a.format(tmp=tmp_path) for a in args), env=env)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and words in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "summary.json").exists()


def test_last_json_reads_one_line_and_indented_results():
    """steps.py prints one line; `skillos ... --json` prints indented JSON: both are the result."""
    sys.path.insert(0, str(CHECK.parent))
    try:
        from check import last_json
    finally:
        sys.path.remove(str(CHECK.parent))
    assert last_json('progress\n{"ok": true}\n') == {"ok": True}
    assert last_json('{"log": 1}\nstep\n{\n "steps": [\n  {"r": 1}\n ],\n "returncode": 0\n}\n') == \
        {"steps": [{"r": 1}], "returncode": 0}
    assert last_json("no result\n{not json") is None


def test_a_training_items_memory_prediction_is_the_plans_rank_less_its_context():
    """What goes beside a training item's measured peak: the memory plan's rank for the config it
    trains, per part, or unmeasured with why (a model not fetched here)."""
    from skillos import config
    from skillos.training.common.memory import CONTEXT_GIB, GIB, memory_plan

    sets = ["--set", "training.bf16=true", "--set", "training.max_steps=2"]
    proc = subprocess.run([sys.executable, str(CHECK.parent / "steps.py"), "memory", "training/configs/cpu-smoke.yaml",
                           *sets], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    cfg = config.load(ROOT / "training" / "configs" / "cpu-smoke.yaml",
                      sets=["training.bf16=true", "compute.gpu=H100:1"])
    rank = memory_plan(cfg).placements[0]
    assert got["predicted_gpu_mb"] == pytest.approx((rank.total_gib - CONTEXT_GIB) * GIB / 2**20, abs=0.5)
    assert {"weights", "gradients", "optimizer", "activations", "logits"} <= set(got["predicted_parts_mb"])
    assert "CUDA context" in got["predicted_reason"]


def test_an_item_the_budget_cuts_short_is_skipped_not_failed(tmp_path, monkeypatch):
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check", CHECK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "MIN_START_S", 0.1)
    check = module.Check(tmp_path, None, budget=1.5, baseline={}, on_cpu=False, only=set())
    check.cuda = None  # as on a GPU machine: the item runs
    item = check.run("stack", [sys.executable, "-c", "import time; time.sleep(30)"], 60)
    assert item["status"] == "skipped" and item["reason"].startswith("time budget: stopped after")
    assert item["wall_s"] is not None  # it ran, and for how long is said
    check.budget = 60
    failed = check.run("wheels", [sys.executable, "-c", "import time; time.sleep(30)"], 1)
    assert failed["status"] == "fail" and failed["reason"] == "timeout after 1s"  # its own timeout: a failure
