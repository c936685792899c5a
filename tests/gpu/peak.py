"""Run a module as `python -m MODULE ARGS` and record what the process took on the GPU.

    python tests/gpu/peak.py RESULT.json -m skillos train CONFIG ...

The GPU check (tests/gpu/check.py) runs every step under this wrapper: the module runs in this
process unchanged (its exit code and output are its own), and at exit RESULT.json gets PyTorch's
own peak of this process on each CUDA device it touched (max_memory_allocated / reserved: the
caching allocator's high-water marks, without the CUDA context). A process that never started
CUDA writes `cuda_used: false` and no number: a missing measurement is null with its reason,
never 0.
"""

from __future__ import annotations

import json
import runpy
import sys
import time


def peak() -> dict:
    torch = sys.modules.get("torch")
    if torch is None:
        return {"cuda_used": False, "reason": "this process never imported torch"}
    try:
        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return {"cuda_used": False, "reason": "this process never started CUDA"}
        devices = [{"index": i, "name": torch.cuda.get_device_name(i),
                    "max_allocated_bytes": torch.cuda.max_memory_allocated(i),
                    "max_reserved_bytes": torch.cuda.max_memory_reserved(i)}
                   for i in range(torch.cuda.device_count())]
    except Exception as exc:  # a CUDA error at exit is reported, not raised over the module's own exit
        return {"cuda_used": None, "reason": f"reading the allocator failed: {type(exc).__name__}: {exc}"[:300]}
    used = [d for d in devices if d["max_reserved_bytes"] > 0]
    return {"cuda_used": bool(used), "devices": devices,
            "max_allocated_bytes": max((d["max_allocated_bytes"] for d in devices), default=None),
            "max_reserved_bytes": max((d["max_reserved_bytes"] for d in devices), default=None),
            **({} if used else {"reason": "CUDA started but nothing was allocated on it"})}


def main(argv: list[str]) -> None:
    if len(argv) < 3 or argv[1] != "-m":
        raise SystemExit("usage: peak.py RESULT.json -m MODULE [ARGS...]")
    result, module = argv[0], argv[2]
    sys.argv = [module] + argv[3:]
    started, code = time.perf_counter(), 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        raise
    except BaseException:
        code = 1
        raise
    finally:
        record = {"module": module, "exit_code": code, "wall_s": round(time.perf_counter() - started, 2), **peak()}
        with open(result, "w") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1:])
