"""The step plan `skillos train --dry-run` prints (training/common/plan.py), the vLLM server-mode and
multi-node launch plans, and the gates that check their layouts; no GPU needed."""

import json

from skillos import config as cfgmod
from conftest import ROOT, run_cli

CONFIGS = ROOT / "training" / "configs"
PAPER = CONFIGS / "skillos-paper-alfworld.yaml"
MULTI = CONFIGS / "skillos-paper-alfworld-2x8.yaml"


def test_the_paper_plan_is_littles_law_at_the_stated_latency():
    from skillos.training.common.plan import step_plan

    cfg = cfgmod.load(PAPER)
    plan = step_plan(cfg)
    assert (plan.rollouts, plan.positions, plan.max_actions, plan.executor_calls) == (32, 10, 30, 9600)
    assert plan.latency_stated and plan.latency_s == 1.0 and plan.concurrency == 32
    assert plan.rollout_seconds == 300 and plan.sequential_seconds == 9600
    assert plan.gpu_busy_share == 120 / 420
    cfg.training.rollout_concurrency, cfg.compute.gpu_seconds_per_step, cfg.compute.executor_latency_s = 8, None, None
    plan = step_plan(cfg)
    assert plan.rollout_seconds == 9600 * 1.0 / 8 and not plan.latency_stated  # assumed latency, said so
    assert plan.gpu_busy_share is None and "GPU-busy share: unmeasured" in "\n".join(plan.lines())


def test_train_dry_run_prints_the_step_plan_and_the_server_and_multi_node_launches(canaries_passed):
    out = run_cli("train", PAPER, "--dry-run")
    assert out.returncode == 0, out.stderr
    assert "step plan: 32 rollouts x 10 games x <= 30 actions = 9600 executor calls per step" in out.stdout
    assert "32 rollouts in flight (the executor server's 32 slots" in out.stdout
    assert "-> 5.0 min per step (Little's law; one at a time: 2.7 h" in out.stdout
    assert "GPUs busy 29% of it" in out.stdout and "vLLM: server" in out.stdout
    assert "memory plan on H100:8 (79.2 GiB each): 8 of 8 GPUs per machine placed" in out.stdout
    server = json.loads(run_cli("train", PAPER, "--dry-run", "--json").stdout)
    assert server["gates"]["exit_code"] == 0
    command = server["plan"]["command"]
    assert command[command.index("--gpu_ids") + 1] == "4,5,6,7" and command[3] == "4"
    assert server["plan"]["vllm_server"].endswith(
        "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model Qwen/Qwen3-8B --tensor-parallel-size 1 "
        "--data-parallel-size 1 --port 8000")
    assert server["plan"]["step_plan"]["vllm_mode"].startswith("server")
    multi = json.loads(run_cli("train", MULTI, "--dry-run", "--json").stdout)
    assert multi["gates"]["exit_code"] == 0
    command = multi["plan"]["command"]
    for flag, value in (("--num_processes", "16"), ("--num_machines", "2"), ("--machine_rank", "0"),
                        ("--main_process_ip", "10.0.0.1"), ("--main_process_port", "29500")):
        assert command[command.index(flag) + 1] == value


def _result(cfg, check):
    from skillos import gates

    return next(r for r in gates.check(cfg).results if r.check == check)


def test_the_gates_refuse_a_server_or_multi_node_layout_that_cannot_start():
    cfg = cfgmod.load(PAPER)
    assert _result(cfg, "vllm-server").status == "PASS"
    cfg.training.vllm_server_base_url, cfg.compute.vllm_server_gpus = None, 5
    result = _result(cfg, "vllm-server")
    assert result.status == "FAIL" and "vllm_server_base_url" in result.detail
    assert "4 training processes + 8 server GPUs per machine exceed the 8 GPUs" in result.detail  # 5 + 3 served
    colocate = cfgmod.load(MULTI)
    colocate.compute.vllm_server_gpus = 2
    assert _result(colocate, "vllm-server").status == "FAIL"  # GPUs held for a server nobody starts
    cfg = cfgmod.load(MULTI)
    assert _result(cfg, "multi-node").status == "PASS"
    cfg.compute.main_process_ip, cfg.compute.machine_rank, cfg.compute.num_processes = None, 2, 15
    detail = _result(cfg, "multi-node").detail
    assert "main_process_ip" in detail and "machine_rank 2 is not in 0..1" in detail and "does not divide" in detail
    assert _result(cfgmod.load(PAPER), "multi-node").status == "SKIP"
    assert _result(cfgmod.load(MULTI, sets=["compute.host_ram_gib=1024"]), "memory").status == "PASS"
    unstated = _result(cfgmod.load(MULTI), "memory")  # where its offloaded Adam states go: unknown, said
    assert unstated.status == "WARN" and unstated.detail.startswith("unestimated: host memory for")
