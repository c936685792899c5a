"""Rules across sections, the named inputs a config reads, and the one entry point that checks a
built config: every field's bounds and choices and each section's own rules (fields.check_fields),
then the rules below. Rules that concern one section live in its `rules(where)` method; a
backend's decoding rules in its registry entry."""

from __future__ import annotations

import json
from pathlib import Path

from skillos import registry
from skillos.errors import ConfigError
from skillos.config.derived import looks_like_path, relative_to_config
from skillos.config.fields import check_fields, lookup
from skillos.config.schema import Config
from skillos.secrets import protect_key_vars

OUTPUT_DIRS = ("eval.output_dir", "training.output_dir")
MODEL_KEYS = ("executor.model", "curator.model", "judge.model", "optimize.optimizer.model", "training.model")


def check(cfg: Config) -> Config:
    """A built config's every rule but the matrix's (config.loading.validate adds it)."""
    check_fields(cfg)
    low, high = cfg.env.reasoning.min_group_size, cfg.training.group_size
    if low is not None and high is not None and low > high:
        raise ConfigError(f"env.reasoning.min_group_size: {low} is above training.group_size {high} (|G| is drawn "
                          "from min_group_size to group_size)")
    check_async(cfg)
    for key, entry in cfg.divergences.items():
        if not isinstance(entry, dict) or set(entry) - {"value", "reason"} or "value" not in entry:
            raise ConfigError(f"divergences.{key}: expected a mapping with 'value' and 'reason'")
        if not str(entry.get("reason") or "").strip():
            raise ConfigError(f"divergences.{key}: a declared departure needs a reason")
    for key in OUTPUT_DIRS:
        value = lookup(cfg, key)
        if value is not None and (not value.strip() or "\0" in value):
            raise ConfigError(f"{key}: must be a folder path, got {value!r}")
    for section, value in cfg.to_dict().items():  # what Config.hash() reads: JSON, keys sorted
        try:
            json.dumps(value, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{section}: holds a value a config cannot record ({exc}); quote a date or other "
                              "YAML-typed value, and write mapping keys as text") from None
    return cfg


def check_async(cfg: Config) -> None:
    """training.async_rollouts where skillos can run it: a trainer that plays ahead, one process,
    no vLLM (TRL 1.16 has no asynchronous trainer; its own, from 1.18, needs vLLM and FSDP2)."""
    t = cfg.training
    if not t.async_rollouts:
        return
    trainer = registry.TRAINERS.get(cfg.skillgate.trainer)
    if trainer is not None and not trainer.async_rollouts:
        raise ConfigError(f"training.async_rollouts: skillgate.trainer {cfg.skillgate.trainer} trains on-policy "
                          "only; the curator trainer plays ahead")
    if (cfg.compute.num_processes or 1) > 1:
        raise ConfigError(f"training.async_rollouts: runs in one process (compute.num_processes is "
                          f"{cfg.compute.num_processes}); several processes need TRL's asynchronous trainer (trl>=1.18)")
    if t.use_vllm:
        raise ConfigError("training.async_rollouts: generates with a copy of the policy in this process, not "
                          "through vLLM; set training.use_vllm: false, or turn async_rollouts off")
    if cfg.compute.deepspeed_config:  # ZeRO shards the weights the copy would be refreshed from
        raise ConfigError("training.async_rollouts: copies the policy's weights between steps, which DeepSpeed "
                          "(compute.deepspeed_config) shards or offloads; remove one of them")
    batch = t.generation_batch_size
    if batch and t.per_device_train_batch_size is None:  # TRL's default (8) would decide how stale a batch is
        raise ConfigError("training.async_rollouts: generation_batch_size is set without "
                          "per_device_train_batch_size; set it, so that the steps one generation serves are the config's")
    per_step = (t.per_device_train_batch_size or 0) * (t.gradient_accumulation_steps or 1)
    steps = -(-batch // per_step) if batch and per_step else 1  # optimizer steps one generation serves (TRL)
    if t.max_staleness is not None and steps > t.max_staleness:
        raise ConfigError(f"training.async_rollouts: one generation batch ({batch} completions) serves {steps} optimizer "
                          f"steps of {per_step}, so a batch made ahead is {steps} steps stale, past training.max_staleness "
                          f"{t.max_staleness}; raise it, or make generation_batch_size one step's completions")


def protect(cfg: Config) -> Config:
    """The key variables the config names: their values are redacted from all output."""
    sections = [cfg.executor, cfg.curator, cfg.judge, cfg.optimize.optimizer]
    protect_key_vars(s.api_key_env for s in sections)
    protect_key_vars(registry.default_key_env(s.backend) for s in sections)
    return cfg


def check_inputs(cfg: Config) -> None:
    """Every input folder or file a config names exists, resolved beside the config file: a
    missing static repo must not play as an empty one. Outputs (output_dir) may not exist yet."""
    def need(key: str, value: str | None, kind: str, beside_config: bool = True) -> None:
        if value is None:
            return
        p = Path(value).expanduser()
        p = relative_to_config(cfg, p) if beside_config else p
        if kind == "folder" and not p.is_dir():
            raise ConfigError(f"{key}: {value!r} is {'a file' if p.exists() else 'missing'}; it must be "
                              f"a folder (looked for {p})")
        if kind == "file" and not p.is_file():
            raise ConfigError(f"{key}: {value!r} is {'a folder' if p.is_dir() else 'missing'}; it must be "
                              f"a file (looked for {p})")

    if any(arm == "static_repo" for arm in cfg.eval.arms):
        need("eval.static_repo", cfg.eval.static_repo, "folder")
    for name, folder in cfg.eval.static_repos.items():
        if not isinstance(folder, str):
            raise ConfigError(f"eval.static_repos.{name}: expected a folder path, got {folder!r}")
        if f"repo:{name}" in cfg.eval.arms:
            need(f"eval.static_repos.{name}", folder, "folder")
    for name, checkpoint in cfg.eval.curators.items():
        if not isinstance(checkpoint, str):
            raise ConfigError(f"eval.curators.{name}: expected a checkpoint path or model id, got {checkpoint!r}")
        if f"curator:{name}" in cfg.eval.arms and looks_like_path(checkpoint):
            need(f"eval.curators.{name}", checkpoint, "folder")
    need("optimize.seed_skills", cfg.optimize.seed_skills, "folder")
    need("optimize.meta_skill", cfg.optimize.meta_skill, "file")
    need("compute.deepspeed_config", cfg.compute.deepspeed_config, "file")
    # Checkpoints and local model folders are read where they are used, from the working
    # directory (they live under an output folder); they must exist all the same.
    need("training.resume_from_checkpoint", cfg.training.resume_from_checkpoint, "folder", False)
    for key in MODEL_KEYS:
        value = lookup(cfg, key)
        if isinstance(value, str) and looks_like_path(value):
            need(key, value, "folder", False)
    for key in OUTPUT_DIRS:  # outputs: relative to the cwd
        value = lookup(cfg, key)
        if value is not None and Path(value).expanduser().is_file():
            raise ConfigError(f"{key}: {value!r} is a file; an output folder is needed")
