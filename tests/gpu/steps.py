"""The GPU check's steps that run inside skillos's environment (tests/gpu/check.py starts each in
its own process, after the carried wheels are on the path; check.py itself imports only the
standard library, so it runs on a bare machine before anything is installed).

    python tests/gpu/steps.py facts                  torch and CUDA facts, as JSON
    python tests/gpu/steps.py stack                  skillos and its training stack import; versions
    python tests/gpu/steps.py tiny full|lora DEVICE  the tiny model trained a few steps in bf16
    python tests/gpu/steps.py derive SRC DST [--set KEY=VALUE]...   a config with the sets written in
    python tests/gpu/steps.py launch-command CONFIG  the command `skillos train --backend accelerate` runs
    python tests/gpu/steps.py requirements WHEEL...  each carried wheel's needs, met or not, here

Each prints one JSON object on its last stdout line.
"""

from __future__ import annotations

import json
import math
import sys
import time


def out(obj) -> None:
    print(json.dumps(obj, default=str), flush=True)


def facts() -> dict:
    import torch

    info = {"torch": torch.__version__, "torch_cuda_build": torch.version.cuda,
            "cuda_available": torch.cuda.is_available(), "device_count": torch.cuda.device_count()}
    if not info["cuda_available"]:
        return info
    info.update(cudnn=torch.backends.cudnn.version(), bf16_supported=torch.cuda.is_bf16_supported(),
                nccl=".".join(map(str, torch.cuda.nccl.version())) if hasattr(torch.cuda, "nccl") else None,
                devices=[])
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        free, total = torch.cuda.mem_get_info(i)
        info["devices"].append({"index": i, "name": p.name, "capability": f"{p.major}.{p.minor}",
                                "multiprocessors": p.multi_processor_count, "total_bytes": total,
                                "free_bytes": free})
    # one bf16 matrix product, timed with CUDA events: the GPU does arithmetic, not just answers
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ a
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(10):
        a @ a
    end.record()
    torch.cuda.synchronize()
    info["bf16_matmul_tflops"] = round(10 * 2 * 4096 ** 3 / (start.elapsed_time(end) / 1e3) / 1e12, 1)
    return info


STACK = ("torch", "transformers", "trl", "peft", "accelerate", "datasets", "alfworld", "textworld",
         "fast-downward-textworld", "jericho", "python-frontmatter", "typer", "numpy", "scipy", "statsmodels")


def stack() -> dict:
    from importlib.metadata import PackageNotFoundError, version
    from pathlib import Path

    import skillos

    versions = {}
    for name in STACK:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            versions[name] = None
    import skillos.cli  # noqa: F401 - every command's module
    from skillos.evals.envs.alfworld import scenes
    from skillos.training import canary, registry  # noqa: F401
    from skillos.training.curator import trainer  # noqa: F401
    from skillos.training.curator.rollouts import check_trl

    scenes.alfworld_root()  # the real ALFWorld engine: alfworld, fast_downward, textworld
    import trl  # noqa: F401
    from trl import GRPOTrainer  # noqa: F401

    check_trl()  # the TRL methods skillos's concurrent rollouts wrap, on this TRL
    missing = [name for name, v in versions.items() if v is None]
    # where each came from: the check's target (carried wheels, linked skillos) or the machine's own
    return {"skillos": str(Path(skillos.__file__).parent), "trl": str(Path(trl.__file__).parent),
            "alfworld": str(Path(scenes.alfworld_root()).parent), "versions": versions, "missing": missing}


def tiny(mode: str, device: str, steps: int = 12) -> dict:
    """The tiny model (built here, no download) trained `steps` optimizer steps with bf16 autocast
    (fp32 master weights, as transformers' Trainer does with bf16=True) on the curator warm-up
    examples: full fine-tuning, or LoRA with gradient checkpointing."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from skillos.evals.backends.tiny_model import build
    from skillos.evals.curation import TOOL_SURFACES
    from skillos.training.common.warmup import _example, curator_examples

    started = time.perf_counter()
    path = build()
    tokenizer = AutoTokenizer.from_pretrained(path)
    net = AutoModelForCausalLM.from_pretrained(path)
    examples = [_example(tokenizer, c, TOOL_SURFACES["curate_and_advance"]) for c in curator_examples()]
    if mode == "lora":
        from peft import LoraConfig, get_peft_model

        net.gradient_checkpointing_enable()
        net.enable_input_require_grads()
        net = get_peft_model(net, LoraConfig(task_type="CAUSAL_LM", r=8, lora_alpha=16, target_modules="all-linear"))
    net.to(device)
    net.train()
    torch.manual_seed(0)
    params = [p for p in net.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=3e-3 if mode == "full" else 2e-2)
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
        torch.cuda.synchronize()
    losses, tokens, dtypes = [], 0, set()
    t0 = time.perf_counter()
    for step in range(steps):
        ids, labels, _, _ = examples[step % len(examples)]  # (ids, labels, weights, said): all weights 1 here
        with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16):
            result = net(input_ids=ids.to(device), labels=labels.to(device))
        result.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(result.loss.detach()))
        dtypes.add(str(result.logits.dtype))
        tokens += ids.numel()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    # the same examples again, after a pass over all of them: their mean loss must have dropped
    n = len(examples)
    again = [(losses[i], losses[i + n]) for i in range(steps - n)]
    finite = all(math.isfinite(x) for x in losses)
    dropped = bool(again) and sum(b for _, b in again) < sum(a for a, _ in again)
    net.eval()
    with torch.no_grad(), torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16):
        ids = examples[0][0].to(device)
        generated = net.generate(input_ids=ids, max_new_tokens=8, do_sample=False,
                                 pad_token_id=tokenizer.pad_token_id)
    record = {"mode": mode, "device": str(next(net.parameters()).device), "steps": steps,
              "autocast": "bfloat16", "logits_dtype": sorted(dtypes),
              "gradient_checkpointing": mode == "lora",
              "trainable_params": sum(p.numel() for p in params),
              "total_params": sum(p.numel() for p in net.parameters()),
              "losses": [round(x, 4) for x in losses], "same_example_before_after": [[round(a, 4), round(b, 4)]
                                                                                   for a, b in again],
              "finite": finite, "loss_dropped": dropped, "generated_tokens": int(generated.shape[1] - ids.shape[1]),
              "train_seconds": round(seconds, 3), "tokens_per_s": round(tokens / seconds, 1) if seconds else None,
              "wall_s": round(time.perf_counter() - started, 2)}
    if device.startswith("cuda"):
        record.update(max_allocated_bytes=torch.cuda.max_memory_allocated(),
                      max_reserved_bytes=torch.cuda.max_memory_reserved())
    record["ok"] = finite and dropped and "torch.bfloat16" in dtypes
    return record


def derive(src: str, dst: str, sets: list[str]) -> dict:
    """SRC with the sets written into it (a launched worker reads its config file, not --set),
    checked by loading it the way the worker will."""
    from pathlib import Path

    import yaml

    from skillos import config, safety

    data = safety.load_yaml(safety.read_text(Path(src), safety.MAX_CONFIG_BYTES, "config file"), src)
    data = config.apply_sets(data, sets)
    Path(dst).write_text(yaml.safe_dump(data, sort_keys=False))
    cfg = config.load(dst)
    return {"config": dst, "backend": cfg.compute.backend, "num_processes": cfg.compute.num_processes}


def launch_command(path: str) -> dict:
    from skillos import config
    from skillos.training.common.launch import plan

    cfg = config.load(path)
    return {"command": plan(cfg, path)["command"]}


def memory(path: str, sets: list[str]) -> dict:
    """The memory plan's training rank for the config an item trains (training/common/memory.py), less the
    CUDA context: what torch's allocator peak (peak.py) should come to at most."""
    from skillos import config
    from skillos.training.common.memory import CONTEXT_GIB, GIB, memory_plan

    cfg = config.load(path, sets=sets + ([] if config.load(path, sets=sets).compute.gpu else ["compute.gpu=H100:1"]))
    plan = memory_plan(cfg)
    rank = next((p for p in plan.placements if p.where == "training rank"), None)
    if rank is None:
        return {"predicted_gpu_mb": None, "predicted_reason": "; ".join(plan.unestimated) or "no training rank"}
    parts = {p.name: round(p.gib * GIB / 2**20, 1) for p in rank.parts if p.name != "CUDA context"}
    return {"predicted_gpu_mb": round(sum(parts.values()), 1), "predicted_parts_mb": parts,
            "predicted_reason": f"memory plan: a training rank less its {CONTEXT_GIB} GiB CUDA context"}


def requirements(wheels: list[str]) -> dict:
    """Each wheel's Requires-Dist (no extras; markers evaluated here) against what is installed:
    the carried wheels go in with --no-deps, so a need the machine does not meet shows here."""
    import zipfile
    from importlib.metadata import PackageNotFoundError, version
    from pathlib import Path

    from packaging.requirements import Requirement

    unmet = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
            lines = z.read(meta).decode("utf-8", "replace").splitlines()
        for line in lines:
            if not line.startswith("Requires-Dist:"):
                continue
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue
            try:
                have = version(req.name)
            except PackageNotFoundError:
                have = None
            if have is None or (req.specifier and not req.specifier.contains(have, prereleases=True)):
                unmet.append({"wheel": Path(wheel).name, "needs": str(req), "installed": have})
    return {"wheels": len(wheels), "unmet": unmet}


def _sets(args: list[str]) -> list[str]:
    sets = []
    while args:
        flag = args.pop(0)
        if flag != "--set" or not args:
            raise SystemExit(f"expected --set KEY=VALUE, got {flag!r}")
        sets.append(args.pop(0))
    return sets


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit(__doc__)
    command, args = argv[0], argv[1:]
    if command == "facts":
        out(facts())
    elif command == "stack":
        out(stack())
    elif command == "tiny":
        record = tiny(args[0], args[1])
        out(record)
        raise SystemExit(0 if record["ok"] else 1)
    elif command == "derive":
        out(derive(args[0], args[1], _sets(args[2:])))
    elif command == "launch-command":
        out(launch_command(args[0]))
    elif command == "memory":
        out(memory(args[0], _sets(args[1:])))
    elif command == "requirements":
        out(requirements(args))
    else:
        raise SystemExit(f"unknown step {command!r}\n{__doc__}")


if __name__ == "__main__":
    main(sys.argv[1:])
