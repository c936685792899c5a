"""The step plan a person reads before paying for GPUs (`skillos train --dry-run`): how many
rollouts and executor calls a GRPO step makes, how long its rollout phase takes at a stated
executor latency and concurrency (Little's law), and what share of the step the GPUs are busy.

A step's rollouts play |G| positions of up to `env.max_steps` executor actions each. With
`concurrency` rollouts in flight, the executor endpoint has that many requests out, so the
rollout phase lasts calls x latency / concurrency (Little's law: L = lambda W). TRL's loop
alternates generation (GPU) and tool rounds (executor): they do not overlap, so the step is the
two added, and the GPUs are busy gpu_seconds / step of it. Nothing here imports torch or TRL.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from skillos.config.derived import server_specs, url_port
from skillos.config.derived import completions_per_step, rollouts_per_generation
from skillos.training.common.memory import memory_plan

# What a remote executor answers in (seconds per action) when the config states nothing: the
# order of a hosted 8B model's reply with reasoning; printed as assumed, never as measured.
ASSUMED_LATENCY_S = 1.0


@dataclass
class StepPlan:
    rollouts: int  # completions per step
    positions: int  # |G|: games per rollout
    max_actions: int  # env.max_steps: executor actions per game, at most
    executor_calls: int  # rollouts x |G| x max_actions: the most a step asks for
    latency_s: float
    latency_stated: bool  # compute.executor_latency_s is set (else ASSUMED_LATENCY_S)
    concurrency: int  # rollouts in flight at once
    executor_slots: int | None  # requests the executor's server holds at once (compute.servers); None: not served
    rollout_seconds: float  # Little's law: calls x latency / concurrency
    sequential_seconds: float  # one rollout at a time: calls x latency
    gpu_seconds: float | None  # compute.gpu_seconds_per_step; None: unmeasured
    step_seconds: float | None
    gpu_busy_share: float | None
    vllm_mode: str

    def to_dict(self) -> dict:
        return asdict(self)

    def lines(self) -> list[str]:
        latency = f"{self.latency_s:g} s per executor action " + (
            "(compute.executor_latency_s)" if self.latency_stated
            else f"(assumed: set compute.executor_latency_s to the endpoint's measured latency)")
        out = [f"step plan: {self.rollouts} rollouts x {self.positions} games x <= {self.max_actions} actions "
               f"= {self.executor_calls} executor calls per step, at {latency}",
               f"  rollout phase: {self.concurrency} rollouts in flight"
               + (f" (the executor server's {self.executor_slots} slots: KV cache / a request's tokens, the memory "
                  "plan)" if self.executor_slots is not None else "")
               + f" -> {duration_text(self.rollout_seconds)} per step "
               f"(Little's law; one at a time: {duration_text(self.sequential_seconds)}"
               + (f", GPUs busy {self.gpu_seconds / (self.gpu_seconds + self.sequential_seconds):.1%})"
                  if self.gpu_seconds is not None else ")")]
        if self.gpu_seconds is None:
            out.append("  GPU-busy share: unmeasured (set compute.gpu_seconds_per_step: a step's generation "
                       "and update time with no executor wait)")
        else:
            out.append(f"  GPU time {duration_text(self.gpu_seconds)} per step (compute.gpu_seconds_per_step) -> step "
                       f"{duration_text(self.step_seconds)}, GPUs busy {self.gpu_busy_share:.0%} of it")
        out.append(f"  vLLM: {self.vllm_mode}")
        return out


def vllm_mode(cfg) -> str:
    t, c = cfg.training, cfg.compute
    if not t.use_vllm:
        return "off (generation by the training model itself)"
    if t.vllm_mode == "server":
        where = t.vllm_server_base_url or "unset"
        return (f"server: `trl vllm-serve` on {c.vllm_server_gpus} GPU(s) per machine of its own, "
                f"training on the rest; base URL {where}")
    return (f"colocate: vLLM shares the training GPUs ({t.vllm_gpu_memory_utilization or 'default'} of their "
            "memory)")


def step_plan(cfg, memory=None) -> StepPlan:
    """`memory`: the launch's memory plan when the caller has it (training/common/launch.plan), else made here."""
    t, c = cfg.training, cfg.compute

    # every completion of the step is a rollout; those of one generation batch are in flight together
    rollouts = completions_per_step(cfg) or 1
    together = rollouts_per_generation(cfg) or rollouts
    positions = t.group_size or 1
    calls = rollouts * positions * cfg.env.max_steps
    latency = c.executor_latency_s if c.executor_latency_s is not None else ASSUMED_LATENCY_S
    slots = executor_slots(cfg, memory)
    concurrency = max(1, min(together, t.rollout_concurrency or together, together if slots is None else slots))
    rollout_seconds = calls * latency / concurrency
    gpu = c.gpu_seconds_per_step
    step = rollout_seconds + gpu if gpu is not None else None
    return StepPlan(rollouts, positions, cfg.env.max_steps, calls, latency, c.executor_latency_s is not None,
                    concurrency, slots, rollout_seconds, calls * latency, gpu, step,
                    gpu / step if gpu is not None and step else None, vllm_mode(cfg))


def executor_slots(cfg, memory=None) -> int | None:
    """The executor server's slots (training/common/memory.py, or the plan `memory` already made), when
    compute.servers serves the executor and compute.gpu says how much memory its GPUs have; None otherwise."""
    if "executor" not in (cfg.compute.servers or {}) or not cfg.compute.gpu:
        return None

    return (memory or memory_plan(cfg)).slots("executor")


def server_commands(cfg) -> dict:
    """`vllm serve` for each model server of compute.servers (config.server_specs: its GPUs, tensor
    and data parallelism, port); the training processes take the GPUs after them (training/common/launch.py)."""
    out = {}
    for role, s in server_specs(cfg).items():
        command = [f"CUDA_VISIBLE_DEVICES={','.join(map(str, s['gpu_ids']))}", "vllm", "serve",
                   str(getattr(cfg, role).model), "--tensor-parallel-size", str(s["tensor_parallel_size"])]
        if s["data_parallel_size"] > 1:
            command += ["--data-parallel-size", str(s["data_parallel_size"])]
        spec = cfg.compute.servers[role]
        for key in ("gpu_memory_utilization", "max_model_len", "max_num_seqs"):
            if key in spec:
                command += [f"--{key.replace('_', '-')}", str(spec[key])]
        out[role] = command + (["--port", str(s["port"])] if s["port"] else [])
    return out


def vllm_server_command(cfg) -> list[str] | None:
    """`trl vllm-serve` for server mode, on the first compute.vllm_server_gpus GPUs of the machine."""
    t, c = cfg.training, cfg.compute
    if not (t.use_vllm and t.vllm_mode == "server"):
        return None
    gpus = ",".join(str(i) for i in range(c.vllm_server_gpus))
    command = [f"CUDA_VISIBLE_DEVICES={gpus}", "trl", "vllm-serve", "--model", str(t.model),
               "--tensor-parallel-size", str(t.vllm_tensor_parallel_size or 1),
               "--data-parallel-size", str(max(1, c.vllm_server_gpus // (t.vllm_tensor_parallel_size or 1)))]
    port = url_port(t.vllm_server_base_url)
    if port:
        command += ["--port", port]
    return command


def duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "unmeasured"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"
