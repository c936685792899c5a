"""Static checks of the multi-GPU layouts a training config asks for: vLLM in server mode on
GPUs of its own, and an accelerate launch across machines. What they protect is a launch that
starts, allocates every GPU, and then waits forever (for a server nobody started, for a main
machine nobody named) or trains on GPUs the vLLM server already holds."""

from __future__ import annotations

from skillos.checking import Context, Result, static, training_only
from skillos.registry import COMPUTE, compute_of
from skillos.config.derived import server_gpus
from skillos.devices import gpu_spec, gpus_per_machine
from skillos.training.common.memory import memory_plan

GATES = (7,)  # watch the box: GPUs that are paid for and idle


@static
@training_only(*GATES)
def vllm_server(ctx: Context) -> Result:
    check = "vllm-server"
    t, c = ctx.cfg.training, ctx.cfg.compute
    incident = "a server-mode run whose trainer waited for a vLLM server that had no GPUs or no address"
    if not (t.use_vllm and t.vllm_mode == "server"):
        if c.vllm_server_gpus:
            return Result(check, GATES, "FAIL", "compute.vllm_server_gpus", c.vllm_server_gpus, 0, incident,
                          f"GPUs reserved for a vLLM server, but training.vllm_mode is {t.vllm_mode!r}")
        return Result(check, GATES, "SKIP", detail="vLLM is not in server mode")
    problems = []
    if c.vllm_server_gpus < 1:
        problems.append("compute.vllm_server_gpus must give the server at least one GPU")
    if not t.vllm_server_base_url:
        problems.append("training.vllm_server_base_url must say where `trl vllm-serve` listens")
    tp = t.vllm_tensor_parallel_size or 1
    if c.vllm_server_gpus and c.vllm_server_gpus % tp:
        problems.append(f"compute.vllm_server_gpus {c.vllm_server_gpus} is not a multiple of "
                        f"training.vllm_tensor_parallel_size {tp}")

    gpus = gpus_per_machine(ctx.cfg)
    per_machine = c.num_processes // max(1, c.num_machines)
    if gpus is None:
        problems.append("compute.gpu (e.g. H100:8) must say how many GPUs a machine has")
    elif per_machine + server_gpus(ctx.cfg) > gpus:
        problems.append(f"{per_machine} training processes + {server_gpus(ctx.cfg)} server GPUs per machine "
                        f"exceed the {gpus} GPUs of compute.gpu {c.gpu}")
    return Result(check, GATES, "FAIL" if problems else "PASS", "training.vllm_mode", "server",
                  "a server with GPUs of its own and an address", incident,
                  "; ".join(problems) or f"{c.vllm_server_gpus} GPU(s) serve at {t.vllm_server_base_url}, "
                  f"{per_machine} train")


@static
@training_only(*GATES)
def multi_node(ctx: Context) -> Result:
    check = "multi-node"
    c = ctx.cfg.compute
    incident = "every machine of a multi-node job waiting on a rendezvous that could never form"
    if c.num_machines <= 1:
        if c.machine_rank:
            return Result(check, GATES, "FAIL", "compute.machine_rank", c.machine_rank, 0, incident,
                          "a machine rank on a one-machine launch")
        return Result(check, GATES, "SKIP", detail="one machine")
    problems = []
    if not compute_of(ctx.cfg).multi_node:
        problems.append(f"compute.backend {c.backend!r} launches one machine; multi-node needs "
                        f"{' or '.join(m.name for m in COMPUTE if m.multi_node)}")
    if not c.main_process_ip:
        problems.append("compute.main_process_ip must name the main machine (rank 0)")
    if not 0 <= c.machine_rank < c.num_machines:
        problems.append(f"compute.machine_rank {c.machine_rank} is not in 0..{c.num_machines - 1}")
    if c.num_processes % c.num_machines:
        problems.append(f"compute.num_processes {c.num_processes} (every machine's) does not divide over "
                        f"{c.num_machines} machines")
    if not 0 < c.main_process_port < 65536:
        problems.append(f"compute.main_process_port {c.main_process_port} is not a port")
    return Result(check, GATES, "FAIL" if problems else "PASS", "compute.num_machines", c.num_machines,
                  "a main address, a rank in range, processes that divide", incident,
                  "; ".join(problems) or f"rank {c.machine_rank} of {c.num_machines}, main "
                  f"{c.main_process_ip}:{c.main_process_port}, {c.num_processes // c.num_machines} processes each")


@static
@training_only(*GATES)
def memory(ctx: Context) -> Result:
    """Each GPU's planned memory against the declared GPU's (training/common/memory.py): a layout that cannot
    start is refused before any GPU is paid for; every component's number is in the detail."""

    check = "memory"
    incident = "a launch that allocated every GPU and then ran out of memory loading its second engine"
    if not gpu_spec(ctx.cfg):
        return Result(check, GATES, "SKIP", detail="no GPU declared (compute.gpu): nothing to place")
    plan = memory_plan(ctx.cfg)
    values = plan.to_dict()
    problems = [f"{p.where}: {p.total_gib:.1f} GiB > {plan.capacity_gib} GiB" if not p.problems
                else f"{p.where}: {'; '.join(p.problems)}" for p in plan.over()]
    problems += plan.unreached + ([plan.host_over()] if plan.host_over() else []) + plan.impossible()
    if not compute_of(ctx.cfg).multi_node and server_gpus(ctx.cfg):  # only its plan gives training other GPUs
        problems.append(f"a {ctx.cfg.compute.backend} launch starts only the training processes, on the first GPUs: "
                        f"the {server_gpus(ctx.cfg)} server GPU(s) would serve nothing or share training's "
                        "(launch with accelerate, which starts training after the servers' GPUs)")
    if plan.gpus_per_machine is not None and plan.gpus_used > plan.gpus_per_machine:
        problems.append(f"{plan.gpus_used} GPUs placed per machine ("
                        + " + ".join(f"{p.gpus} {p.where}" for p in plan.placements)
                        + f") > the {plan.gpus_per_machine} of compute.gpu {plan.gpu}")
    detail = " | ".join(plan.lines())
    if problems:
        return Result(check, GATES, "FAIL", "compute.gpu", plan.gpu, "every GPU's plan within its memory",
                      incident, "; ".join(problems) + " | " + detail, values=values)
    near = [f"{p.where} at {p.total_gib / plan.capacity_gib:.0%} of the GPU" for p in plan.near()]
    if near or plan.unestimated:
        why = near + [f"unestimated: {u}" for u in plan.unestimated]
        return Result(check, GATES, "WARN", "compute.gpu", plan.gpu, "every GPU's plan within 90% of its memory",
                      incident, "; ".join(why) + " | " + detail, values=values)
    return Result(check, GATES, "PASS", "compute.gpu", plan.gpu, "every GPU's plan within its memory", incident,
                  detail, values=values)
