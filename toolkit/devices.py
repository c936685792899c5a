"""Whether a launch uses a GPU: what it will use, not what it declares.

Gates 5 (a person approved the plan) and 6 (the recipe learns) guard every launch that spends
GPUs. A launch spends them when it names them (compute.gpu, an accelerate or Modal launch, Ray
tasks that reserve GPUs), when something it runs exists only on a GPU (a vllm backend, a sweep
serving adapters from one vLLM server, TRL's use_vllm, a DeepSpeed config), or when its process
can see a CUDA device and will put a model on it (training, or an hf backend: torch moves both
to CUDA whenever it sees one). `gpu_launch` is the one predicate; every launch path asks it,
the library's included. A launch that names no GPU and finds one anyway (`undeclared`) is
refused before any weight moves: the plan's GPU-hours and the approval would count none.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from skillos.config.derived import curator_config
from skillos.registry import BACKENDS, COMPUTE, compute_of, uses_model

MODEL_SECTIONS = ("executor", "curator", "judge", "optimize.optimizer", "sleep.model", "sleep.optimizer")
GPU_BACKENDS = tuple(c.name for c in COMPUTE if c.spends_gpus)  # compute.backend values that launch on GPUs
HIDE_CUDA = "CUDA_VISIBLE_DEVICES="  # what keeps a launch on the CPU of a machine with GPUs
MODAL_GPU = "H100"  # what a Modal launch asks for when compute.gpu names none: one per process


def gpu_spec(cfg) -> str | None:
    """The GPUs a launch asks for, TYPE:N per machine: compute.gpu; a Modal launch that names none
    asks for one H100 per training process (what training/common/launch.py requests and the plan costs)."""
    c = cfg.compute
    if c.gpu:
        return c.gpu
    return f"{MODAL_GPU}:{c.num_processes}" if compute_of(cfg).gpu_by_type else None


def gpus_per_machine(cfg) -> int | None:
    """N of `gpu_spec` (TYPE alone: 1); None when the launch names no GPU."""
    spec = gpu_spec(cfg)
    if not spec:
        return None
    return int(spec.split(":")[1]) if ":" in spec else 1


# Device files of GPUs torch reaches without NVIDIA's driver files: ROCm's kernel driver, WSL2's GPU
# paravirtualisation. Where one exists, only torch can say how many devices it sees.
OTHER_ACCELERATORS = ("/dev/kfd", "/dev/dxg")


def cuda_devices() -> int:
    """CUDA devices this process can see, without importing torch where the NVIDIA driver's files
    answer (the static gates stay light): torch's own count when it is already imported, else the
    NVIDIA driver's devices less those CUDA_VISIBLE_DEVICES hides; on a machine with no NVIDIA
    driver files but another accelerator's (ROCm, WSL2), torch's count (imported for it, when installed)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        try:
            return int(torch.cuda.device_count())
        except Exception:  # noqa: BLE001 - a broken CUDA install shows no device; the driver count follows
            pass
    gpus = Path("/proc/driver/nvidia/gpus")
    try:
        present = len(list(gpus.iterdir())) if gpus.is_dir() else len(
            [p for p in Path("/dev").glob("nvidia*") if re.fullmatch(r"nvidia\d+", p.name)])
    except OSError:
        present = 0
    if not present and torch is None and any(Path(p).exists() for p in OTHER_ACCELERATORS):
        return _torch_count()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return present
    ids = [v for v in visible.split(",") if v.strip()]
    if not ids or ids[0].strip() == "-1":  # "" or -1: CUDA sees nothing
        return 0
    return min(present, len(ids))


def _torch_count() -> int:
    """torch's device count (it honours CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES itself); 0 where
    torch is not installed or cannot initialise."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        return 0
    try:
        import torch

        return int(torch.cuda.device_count())
    except Exception:  # noqa: BLE001 - a broken install shows no device
        return 0


def seen_gpu_spec() -> str | None:
    """compute.gpu's TYPE:N for the CUDA devices torch sees here (TYPE from the first device's name,
    e.g. H100; else `cuda`), None when it sees none: what a canary runs on when it is not told."""
    count = cuda_devices()
    if not count:
        return None
    import torch

    name = torch.cuda.get_device_name(0)
    model = re.search(r"\b([A-Z]{1,3}\d{2,4}[A-Za-z]{0,3})\b", name)
    return f"{model.group(1) if model else 'cuda'}:{count}"


def machine_kind(backend: str = "local") -> dict:
    """What a wall time measured on this machine depends on: its CPU cores, the CUDA devices this
    process sees, and where the work ran (compute.backend). Recorded with every canary, so an
    estimate quotes runs on a machine like the one that asks."""
    return {"cpus": os.cpu_count() or 1, "cuda": cuda_devices(), "backend": backend}


def kind_line(kind: dict) -> str:
    """A machine kind in words: '2 CPU cores, no GPU, local'."""
    cuda = kind.get("cuda") or 0
    return (f"{kind.get('cpus')} CPU cores, " + (f"{cuda} CUDA device{'s' if cuda != 1 else ''}" if cuda else "no GPU")
            + f", {kind.get('backend', 'local')}")


@dataclass
class GpuLaunch:
    """Why a launch uses GPUs (`reasons`, each naming its key); false when there is none."""

    reasons: list = field(default_factory=list)
    cuda: int = 0  # CUDA devices this process sees (0 when not probed)
    undeclared: bool = False  # only the CUDA device makes it one: the config names no GPU

    def __bool__(self) -> bool:
        return bool(self.reasons)

    @property
    def why(self) -> str:
        return "; ".join(self.reasons) if self.reasons else "the local CPU (no GPU named, no GPU-only backend, " \
            "no CUDA device visible to a model this launch runs)"


def declared(cfg) -> list[str]:
    """What in the config itself puts the launch on GPUs, each naming its key."""
    c, out = cfg.compute, []
    if c.gpu is not None:
        out.append(f"compute.gpu {c.gpu}")
    if c.backend in GPU_BACKENDS:
        out.append(f"compute.backend {c.backend}")
    if (c.ray_gpus_per_task or 0) > 0 and compute_of(cfg).distributes:
        out.append(f"compute.ray_gpus_per_task {c.ray_gpus_per_task:g}")
    for where, backend in _backends(cfg):
        entry = BACKENDS.get(backend)
        if entry is not None and entry.gpu_only:
            out.append(f"{where} {backend} (GPU only)")
    if cfg.sweep.serve == "adapters":
        out.append("sweep.serve adapters (one vLLM server on a GPU)")
    if cfg.training.is_set():
        if cfg.training.use_vllm:
            out.append("training.use_vllm (vLLM generation on GPUs)")
        if c.deepspeed_config:
            out.append(f"compute.deepspeed_config {c.deepspeed_config} (DeepSpeed shards over GPUs)")
    return out


def runs_model_here(cfg) -> list[str]:
    """What puts a model on this process's devices: training, or a local backend it runs."""
    out = ["training (the trainer moves the policy to CUDA when torch sees one)"] if cfg.training.is_set() else []
    for where, backend in _backends(cfg):
        entry = BACKENDS.get(backend)
        if entry is not None and entry.local and uses_model(backend):
            out.append(f"{where} {backend}")
    return out


def _backends(cfg) -> list[tuple[str, str]]:
    """(where, backend) of every model a launch of `cfg` may run: each model section's, and each
    learning arm's curator (a `curator:NAME` arm runs its checkpoint on a local backend)."""
    out = [(f"{section}.backend", _section(cfg, section).backend) for section in MODEL_SECTIONS]
    out += [(f"eval arm {arm}: curator.backend", curator_config(cfg, arm).backend)
            for arm in cfg.eval.arms if str(arm).startswith("curator:") and arm[8:] in cfg.eval.curators]
    return out


def gpu_launch(cfg, cuda: int | None = None) -> GpuLaunch:
    """Whether `cfg`'s launch uses GPUs, and why: what it declares, or a CUDA device this process
    sees (`cuda`: the count; None: probed now) beside a model it runs here."""
    named = declared(cfg)
    seen = cuda_devices() if cuda is None else cuda
    here = runs_model_here(cfg) if seen else []
    found = [f"this process sees {seen} CUDA device(s) and runs {here[0]} on them"] if here else []
    return GpuLaunch(named + found, seen, undeclared=bool(found) and not named)


def undeclared(cfg, cuda: int | None = None) -> str | None:
    """Why the launch must be refused when it names no GPU and would put a model on one it finds
    (the key to set); None when it declares its GPUs or finds none it would use."""
    launch = gpu_launch(cfg, cuda)
    if not launch.undeclared:
        return None
    return (f"{launch.reasons[-1]}, but the config names no GPU: set compute.gpu (e.g. compute.gpu=H100:"
            f"{launch.cuda}) so the plan, the approval and the canary gate count them, or run with {HIDE_CUDA} "
            "to stay on the CPU")


def _section(cfg, dotted: str):
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg

