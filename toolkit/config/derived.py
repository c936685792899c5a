"""Values derived from a config, computed here only: paths resolved beside the config file, the
batch's sizes (TRL computes its own the same way in GRPOConfig.__post_init__), the model servers'
layout and the curator an arm learns with. The trainer, the launch plan, the gates and the eval
read them from these functions."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from skillos import registry
from skillos.config.backend import CuratorConfig
from skillos.config.compute import VLLM_MAX_SEQS, VLLM_UTILIZATION
from skillos.config.schema import Config

# the key the sweep's adapter server is started with (a fresh token per sweep, never written)
ADAPTER_KEY_ENV = "SKILLOS_ADAPTER_SERVER_KEY"


def relative_to_config(cfg: Config, path: str | Path) -> Path:
    """A path a config names: relative paths resolve beside the config file it was loaded from."""
    p = Path(path)
    return Path(cfg.source).parent / p if not p.is_absolute() and cfg.source is not None else p


def looks_like_path(value: str) -> bool:
    """A model name that is a local path (./ckpt, /abs, ~/x) rather than a hub id (org/name)."""
    return value.startswith((".", "/", "~"))


def training_output_dir(cfg: Config) -> Path:
    """Where training writes checkpoints: training.output_dir, else checkpoints/EXPERIMENT."""
    return Path(cfg.training.output_dir or f"checkpoints/{cfg.experiment.name}")


def completions_per_step(cfg: Config) -> int | None:
    """Completions one optimizer step consumes, the effective batch: per-device batch x gradient
    accumulation x processes (TRL counts completions in the per-device batch); None when either
    is not set."""
    t = cfg.training
    if t.per_device_train_batch_size is None or t.gradient_accumulation_steps is None:
        return None
    return t.per_device_train_batch_size * t.gradient_accumulation_steps * cfg.compute.num_processes


def groups_per_step(cfg: Config) -> int | float | None:
    """GRPO groups (dataset rows) one optimizer step consumes: completions / num_generations; an
    int when it divides (TRL requires that), None when either is unset."""
    done, g = completions_per_step(cfg), cfg.training.num_generations
    if done is None or not g:
        return None
    return done // g if done % g == 0 else done / g


def rollouts_per_generation(cfg: Config) -> int | None:
    """Rollouts generated, and played, together: training.generation_batch_size, else TRL's
    default, one optimizer step's completions."""
    return cfg.training.generation_batch_size or completions_per_step(cfg)


def url_port(url: str | None) -> str | None:
    """The port an http(s) address names (`http://HOST:PORT/v1` -> "PORT"); None when it names none."""
    host = (url or "").split("://", 1)[-1].split("/", 1)[0]
    return host.rsplit(":", 1)[1] if ":" in host else None


def server_specs(cfg: Config) -> dict:
    """compute.servers with every default filled in, by role in order: gpus (1), tensor_parallel_size
    (its gpus), data_parallel_size, gpu_memory_utilization (vLLM's 0.9), max_model_len (None: the
    model's), max_num_seqs (vLLM's 256), the GPU ids it takes (after `trl vllm-serve`'s) and the port
    of its role's base_url (None when it names none). The memory plan, the launch's `vllm serve`
    commands and the GPU counts all read this."""
    first, out = cfg.compute.vllm_server_gpus, {}
    for role, spec in sorted((cfg.compute.servers or {}).items()):
        gpus = int(spec.get("gpus", 1))
        tp = int(spec.get("tensor_parallel_size", gpus))
        port = url_port(getattr(cfg, role).base_url)
        out[role] = {"gpus": gpus, "tensor_parallel_size": tp, "data_parallel_size": max(1, gpus // tp),
                     "gpu_memory_utilization": float(spec.get("gpu_memory_utilization", VLLM_UTILIZATION)),
                     "max_model_len": spec.get("max_model_len"),
                     "max_num_seqs": int(spec.get("max_num_seqs", VLLM_MAX_SEQS)),
                     "gpu_ids": list(range(first, first + gpus)),
                     "port": int(port) if port and port.isdigit() else None}
        first += gpus
    return out


def server_gpus(cfg: Config) -> int:
    """GPUs per machine that serve (`trl vllm-serve` and compute.servers), before the training
    processes' (training/common/launch.py gives training the GPUs after them)."""
    return cfg.compute.vllm_server_gpus + sum(s["gpus"] for s in server_specs(cfg).values())


def static_repo_path(cfg: Config, arm: str) -> str | None:
    """The fixed skill folder an arm plays with (static_repo, repo:NAME), resolved beside the
    config file, else None."""
    if arm == "static_repo":
        folder = cfg.eval.static_repo
    elif arm.startswith("repo:"):
        folder = cfg.eval.static_repos[arm[5:]]
    else:
        return None
    return str(relative_to_config(cfg, Path(folder).expanduser())) if folder else None


def curator_config(cfg: Config, arm: str) -> CuratorConfig:
    """The curator an arm learns with: `curator:NAME` arms swap in their checkpoint as the model
    (on a local backend: hf unless the config says vllm); under `sweep.serve: adapters` the
    openai backend at the sweep's adapter server, asking for adapter NAME (training/common/serve_adapters.py).
    Other learning arms use `curator`."""
    if not arm.startswith("curator:"):
        return cfg.curator
    if cfg.sweep.serve == "adapters":
        return dataclasses.replace(cfg.curator, backend="openai", model=arm[8:], api_key_env=ADAPTER_KEY_ENV,
                                   base_url=f"http://127.0.0.1:{cfg.sweep.port}/v1")
    backend = cfg.curator.backend if cfg.curator.backend in registry.local_backends() else registry.DEFAULT_LOCAL
    return dataclasses.replace(cfg.curator, backend=backend, model=checkpoint_of(cfg, arm))


def checkpoint_of(cfg: Config, arm: str) -> str:
    """A `curator:NAME` arm's checkpoint (a local one resolved beside the config, like every path)."""
    model = cfg.eval.curators[arm[8:]]
    if looks_like_path(model):
        model = str(relative_to_config(cfg, Path(model).expanduser()))
    return model
