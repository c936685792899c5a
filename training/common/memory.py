"""The GPU memory plan: what each GPU of a launch holds, from the config alone (gate 7's `memory`
row, `skillos train --dry-run`), so a layout that cannot start is refused before the GPUs are paid
for. The seed lost days to launches that allocated every GPU and then died loading a second engine.

A launch puts three kinds of thing on GPUs:
- a **training rank** (one per training process): the policy's weights, a reference model when
  beta != 0 and the run is not LoRA, its gradients and Adam states, sharded as the DeepSpeed config's
  ZeRO stage shards them (Rajbhandari et al. 2020: weights 2Ψ, gradients 2Ψ, Adam K·Ψ with K = 12 in
  mixed precision; stage 1 divides the optimizer states by N, stage 2 the gradients too, stage 3 the
  weights too), activations for the largest micro-batch (per_device_train_batch_size sequences of
  max_prompt_length + max_completion_length: the layer inputs gradient checkpointing keeps plus one
  layer's working set, Korthikanti et al. 2022's 34·s·b·h bytes at 16 bits), the completion logits
  TRL's loss holds, and every vLLM engine that runs in the process: TRL's colocated generator
  (vllm_gpu_memory_utilization of the GPU) and an executor or judge on the in-process vllm backend
  (vLLM's default 0.9 of the GPU each);
- **TRL's generation server** (`trl vllm-serve`, training.vllm_mode server): its GPUs of its own;
- a **model server** (compute.servers: the executor or judge on `vllm serve`, reached by the openai
  backend): weights over its tensor-parallel GPUs, vLLM's profile-run activations, and the KV cache,
  which takes the rest of gpu_memory_utilization; a server whose cache cannot hold one max_model_len
  sequence does not start (vLLM's own refusal), and its cache divided by a request's tokens is the
  slots the step plan's concurrency is capped by.

Shapes come from the model's config.json (a local folder, a fetched model, the tiny model) or the
table below (each entry that model's published config.json); a model in neither is unestimated,
never guessed. Estimates, not measurements: tests/test_memory.py holds them to the ZeRO paper's
numbers, vLLM's own start-up lines and tensors measured on CPU, and tests/gpu/check.py prints the
prediction beside each item's measured peak.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skillos.config.compute import VLLM_MAX_SEQS, VLLM_UTILIZATION
from skillos.config.derived import relative_to_config, rollouts_per_generation, server_specs
from skillos.devices import gpu_spec, gpus_per_machine
from skillos.errors import ConfigError
from skillos.evals.backends import tiny_model
from skillos.models import MODELS, models_dir
from skillos.registry import BACKENDS, TRAINERS

GIB = 1024 ** 3
CONTEXT_GIB = 0.5  # a CUDA context and the allocator's slack, per process on a GPU
WARN_SHARE = 0.9  # within 10% of the GPU: WARN
VLLM_BATCHED_TOKENS = 8192  # vLLM's max_num_batched_tokens: the profile run's batch
VLLM_OVERHEAD_GIB = 0.75  # CUDA graphs and non-torch memory (vLLM's start-up lines: 0.3-0.6 GiB)
PROMPT_TOKENS = 4096  # assumed prompt of one executor request (skills, history, observation)
# TRL 1.16 GRPOConfig's own values for fields a config leaves unset (bf16: on, set in its __post_init__
# on a GPU); tests/test_memory.py holds them to the installed TRL
TRL_DEFAULTS = {"per_device_train_batch_size": 8, "max_completion_length": 512, "bf16": True,
                "gradient_checkpointing": True, "beta": 0.0, "vllm_gpu_memory_utilization": 0.3}
LOGIT_COPIES = 3  # the completion logits, their temperature-scaled copy, the log-softmax kept for backward

# total memory torch reports, GiB (nvidia-smi's MiB / 1024); a TYPE of compute.gpu not here is unestimated
GPU_GIB = {"H100": 79.2, "H200": 139.8, "B200": 178.4, "A100-80GB": 79.2, "A100-40GB": 39.4, "A100": 39.4,
           "L40S": 44.4, "A10G": 22.0, "A10": 22.0, "L4": 22.0, "T4": 14.6}

# config.json fields of models a config may name by hub id (no download: this machine reaches no hub)
_QWEN3 = dict(model_type="qwen3", head_dim=128, num_key_value_heads=8, vocab_size=151936,
              max_position_embeddings=40960, torch_dtype="bfloat16")
SHAPES = {
    "Qwen/Qwen3-0.6B": dict(_QWEN3, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                            num_attention_heads=16, tie_word_embeddings=True),
    "Qwen/Qwen3-1.7B": dict(_QWEN3, hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                            num_attention_heads=16, tie_word_embeddings=True),
    "Qwen/Qwen3-4B": dict(_QWEN3, hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                          num_attention_heads=32, tie_word_embeddings=True),
    "Qwen/Qwen3-8B": dict(_QWEN3, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36,
                          num_attention_heads=32, tie_word_embeddings=False),
    "Qwen/Qwen3-14B": dict(_QWEN3, hidden_size=5120, intermediate_size=17408, num_hidden_layers=40,
                           num_attention_heads=40, tie_word_embeddings=False),
    "Qwen/Qwen3-32B": dict(_QWEN3, hidden_size=5120, intermediate_size=25600, num_hidden_layers=64,
                           num_attention_heads=64, tie_word_embeddings=False),
    "Qwen/Qwen2.5-7B-Instruct": dict(model_type="qwen2", hidden_size=3584, intermediate_size=18944,
                                     num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4,
                                     vocab_size=152064, tie_word_embeddings=False, max_position_embeddings=32768,
                                     torch_dtype="bfloat16"),
}


@dataclass(frozen=True)
class Shape:
    """A decoder's shape: what its weights, KV cache and activations are made of."""
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    qkv_bias: bool  # Qwen2: q, k and v projections have biases
    qk_norm: bool  # Qwen3: per-head RMSNorm on q and k
    max_positions: int
    weight_bytes: int  # 2 for a bf16/fp16 checkpoint, 4 for fp32

    @classmethod
    def from_hf(cls, c: dict) -> "Shape":
        if any(c.get(k) for k in ("num_experts", "num_local_experts", "n_routed_experts")):
            raise ValueError("a mixture of experts: its experts' weights are not in this table's dense formula")
        for key in ("num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "vocab_size",
                    "num_key_value_heads", "head_dim", "max_position_embeddings"):
            value = c.get(key, 1 if key in ("num_key_value_heads", "head_dim", "max_position_embeddings") else None)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ImpossibleShape(f"{key} {value!r} is not a positive count")
        heads = c["num_attention_heads"]
        dtype = str(c.get("torch_dtype") or c.get("dtype") or "float32")
        return cls(c["num_hidden_layers"], c["hidden_size"], c["intermediate_size"], heads,
                   c.get("num_key_value_heads") or heads, c.get("head_dim") or c["hidden_size"] // heads,
                   c["vocab_size"], bool(c.get("tie_word_embeddings", False)), c.get("model_type") == "qwen2",
                   c.get("model_type") == "qwen3", c.get("max_position_embeddings") or 4096,
                   4 if "32" in dtype else 2)

    def linears(self) -> dict:
        """Each layer's linear modules as (in, out): what LoRA's target_modules name."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        return {"q_proj": (self.hidden, q), "k_proj": (self.hidden, kv), "v_proj": (self.hidden, kv),
                "o_proj": (q, self.hidden), "gate_proj": (self.hidden, self.intermediate),
                "up_proj": (self.hidden, self.intermediate), "down_proj": (self.intermediate, self.hidden)}

    @property
    def params(self) -> int:
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        layer = sum(i * o for i, o in self.linears().values()) + 2 * self.hidden
        layer += (q + 2 * kv) * self.qkv_bias + 2 * self.head_dim * self.qk_norm
        return self.vocab * self.hidden * (1 if self.tied else 2) + self.layers * layer + self.hidden

    def lora_params(self, lora: dict) -> int:
        """Trainable parameters of a LoRA adapter: r·(in + out) per linear module it targets, matched as
        peft matches them (a string is a regular expression over the module's full name, a list entry
        the name or a dotted suffix of it, "all-linear" every linear layer but the output head)."""
        import re

        targets, r = lora.get("target_modules") or ["q_proj", "v_proj"], lora.get("r", 8)  # peft's defaults here
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise ConfigError(f"training.lora.r: a positive integer rank, got {r!r}")
        if not isinstance(targets, (str, list)) or isinstance(targets, list) and not all(
                isinstance(x, str) for x in targets):
            raise ConfigError(f"training.lora.target_modules: a module name, a list of them or all-linear, "
                              f"got {targets!r}")
        full = {n: f"model.layers.0.{'self_attn' if n.endswith(('q_proj', 'k_proj', 'v_proj', 'o_proj')) else 'mlp'}.{n}"
                for n in self.linears()}

        def hit(name: str) -> bool:
            if targets == "all-linear":
                return True
            if isinstance(targets, str):
                try:
                    return re.fullmatch(targets, full[name]) is not None
                except re.error as exc:
                    raise ConfigError(f"training.lora.target_modules: {targets!r} is not a regular expression "
                                      f"({exc})") from None
            return any(full[name] == x or full[name].endswith("." + x) for x in targets)

        return self.layers * sum(r * (i + o) for n, (i, o) in self.linears().items() if hit(n))

    def kv_bytes_per_token(self, tensor_parallel: int = 1) -> int:
        """K and V of every layer for one token at 16 bits, on one of `tensor_parallel` GPUs."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 2 // min(tensor_parallel, self.kv_heads)


def shape_of(model: str | None) -> tuple[Shape | None, str]:
    """The model's shape and where it came from; (None, why) when neither a config.json nor the table
    has it."""
    if not model:
        return None, "no model named"

    if model == tiny_model.TINY_NAME:
        return Shape.from_hf({**tiny_model.SHAPE, "model_type": "qwen2", "vocab_size": tiny_model.VOCAB_SIZE}), \
            "skillos's tiny model (evals/backends/tiny_model.py)"
    path = models_dir() / model if model in MODELS else Path(model).expanduser()
    config = path / "config.json"
    if model in MODELS and not config.is_file():
        return None, f"{model!r} is not fetched here (`skillos models fetch {model}`): its config.json gives its shape"
    if config.is_file():
        try:
            return Shape.from_hf(json.loads(config.read_text())), str(config)
        except ImpossibleShape as exc:
            return None, f"{IMPOSSIBLE}: {config}: {exc}"
        except (ValueError, KeyError, TypeError) as exc:
            return None, f"{config} has no decoder shape ({exc})"
    known = {name.lower(): name for name in SHAPES}
    if model.lower() in known:
        return Shape.from_hf(SHAPES[known[model.lower()]]), f"{known[model.lower()]}'s config.json (training/common/memory.py)"
    return None, (f"{model!r}: not in the memory plan's table (training/common/memory.py SHAPES) and no config.json "
                  "on this machine")


class ImpossibleShape(ValueError):
    """A model config no model can have (a negative or zero count): a refusal, not an unknown."""


IMPOSSIBLE = "impossible shape"  # how the plan's unestimated entries name one (the memory check FAILs it)


@dataclass
class Part:
    name: str
    gib: float
    how: str


@dataclass
class Placement:
    """What one GPU of a kind holds (every training rank alike; every GPU of one server alike)."""
    where: str
    gpus: int  # GPUs of the launch placed like this (per machine)
    parts: list = field(default_factory=list)
    problems: list = field(default_factory=list)  # why it cannot start, apart from the total
    slots: int | None = None  # a model server: requests it holds at once (KV cache / a request's tokens)
    reserves: float | None = None  # a server sizes itself to this share of the GPU (not a near miss)

    @property
    def total_gib(self) -> float:
        return sum(p.gib for p in self.parts)

    def line(self, capacity: float | None) -> str:
        parts = ", ".join(f"{p.name} {p.gib:.1f}" for p in self.parts)
        of = f" of {capacity:.1f} GiB" if capacity else ""
        return f"{self.where} (x{self.gpus}): {self.total_gib:.1f}{of} = {parts}"


@dataclass
class MemoryPlan:
    gpu: str | None  # compute.gpu
    capacity_gib: float | None  # one GPU's memory; None: the type is not in GPU_GIB
    gpus_per_machine: int | None
    placements: list = field(default_factory=list)
    unestimated: list = field(default_factory=list)  # what has no estimate, and why
    unreached: list = field(default_factory=list)  # servers placed that nothing calls
    # what DeepSpeed offloads to each machine's CPU memory, against that memory (None: nothing offloaded)
    host: dict | None = None

    @property
    def gpus_used(self) -> int:
        return sum(p.gpus for p in self.placements)

    def host_over(self) -> str | None:
        """Why the offloaded states do not fit each machine's memory (None: they do, or none)."""
        h = self.host
        if not h or h["ram_gib"] is None or h["offloaded_gib"] <= h["ram_gib"]:
            return None
        return (f"host memory: {h['offloaded_gib']:.1f} GiB offloaded per machine ({h['how']}) > its "
                f"{h['ram_gib']:.1f} GiB ({h['ram_source']})")

    def impossible(self) -> list[str]:
        """Why the plan cannot be right whatever the GPU: a shape no model has, or a GPU of a type the
        table lacks asked to hold more than the largest GPU it knows."""
        out = [u for u in self.unestimated if IMPOSSIBLE in u]
        if self.capacity_gib is None:
            kind, biggest = max(GPU_GIB.items(), key=lambda item: item[1])
            out += [f"{p.where}: {p.total_gib:.1f} GiB per GPU, more than the largest GPU the table knows ({kind}, "
                    f"{biggest} GiB)" for p in self.placements if p.total_gib > biggest]
        return out

    def over(self) -> list:
        """Placements that exceed the GPU or cannot start."""
        return [p for p in self.placements if p.problems or (self.capacity_gib and p.total_gib > self.capacity_gib)]

    def near(self) -> list:
        return [p for p in self.placements if p not in self.over() and self.capacity_gib and p.reserves is None
                and p.total_gib > WARN_SHARE * self.capacity_gib]

    def slots(self, role: str) -> int | None:
        return next((p.slots for p in self.placements if p.where == f"{role} server"), None)

    def to_dict(self) -> dict:
        out = asdict(self)
        for p, d in zip(self.placements, out["placements"]):
            d["total_gib"] = round(p.total_gib, 2)
            d["parts"] = [{**part, "gib": round(part["gib"], 2)} for part in d["parts"]]
        out["lines"] = self.lines()
        return out

    def lines(self) -> list[str]:
        each = f"{self.capacity_gib} GiB each" if self.capacity_gib else "memory per GPU unknown"
        head = f"memory plan on {self.gpu} ({each}): {self.gpus_used} of {self.gpus_per_machine} GPUs per machine placed"
        host = [] if not self.host else [
            f"  host memory per machine: {self.host['offloaded_gib']:.1f} GiB offloaded ({self.host['how']}) of "
            + ("unknown" if self.host["ram_gib"] is None else f"{self.host['ram_gib']:.1f} GiB")
            + f" ({self.host['ram_source']})"]
        return [head] + ["  " + p.line(self.capacity_gib) + "".join(f"; {x}" for x in p.problems)
                         for p in self.placements] + host + [f"  unestimated: {u}" for u in self.unestimated]


def gpu_capacity(gpu: str | None) -> tuple[float | None, str]:
    kind = (gpu or "").split(":")[0]
    known = {k.lower(): k for k in GPU_GIB}
    if kind.lower() in known:
        return GPU_GIB[known[kind.lower()]], kind
    return None, f"GPU type {kind!r} is not in the memory plan's table ({', '.join(GPU_GIB)})"


def memory_plan(cfg) -> MemoryPlan:
    """Per-GPU memory of `cfg`'s launch (see the module's docstring)."""

    spec = gpu_spec(cfg)
    capacity, why = gpu_capacity(spec)
    plan = MemoryPlan(spec, capacity, gpus_per_machine(cfg))
    if capacity is None:
        plan.unestimated.append(why)
    t, c = cfg.training, cfg.compute
    policy, source = shape_of(t.model)
    if t.model:
        rank = Placement("training rank", max(1, c.num_processes) // max(1, c.num_machines))
        plan.placements.append(rank)
        if policy is None:
            plan.unestimated.append(f"training.model: {source}")
        else:
            _training_rank(cfg, policy, capacity, rank, plan.unestimated, plan)
    if t.use_vllm and t.vllm_mode == "server":
        tp = t.vllm_tensor_parallel_size or 1
        server = Placement("trl vllm-serve", max(1, c.vllm_server_gpus), reserves=VLLM_UTILIZATION)
        plan.placements.append(server)
        if policy is not None:
            _server(server, policy, tp, VLLM_UTILIZATION, policy.max_positions, VLLM_MAX_SEQS, None, capacity,
                    plan.unestimated)
    for role, s in server_specs(cfg).items():
        section = getattr(cfg, role)
        if section.backend != "openai" or not section.base_url:  # a server nothing reaches holds its GPUs for nothing
            plan.unreached.append(f"compute.servers.{role}: {role}.backend is {section.backend!r}; a served {role} is "
                                  f"reached by backend openai with {role}.base_url set to the server")
        if not section.model or s["port"] is None:
            plan.unreached.append(f"compute.servers.{role}: `vllm serve` needs {role}.model and a port in "
                                  f"{role}.base_url (http://HOST:PORT/v1), the one the client calls")
        server = Placement(f"{role} server", s["gpus"], reserves=s["gpu_memory_utilization"])
        plan.placements.append(server)  # its GPUs count whether or not its memory can be estimated
        shape, source = shape_of(section.model)
        if shape is None:
            plan.unestimated.append(f"compute.servers.{role}: {source}")
            continue
        max_len = s["max_model_len"] or shape.max_positions
        request = min(max_len, (section.max_tokens or 0) + PROMPT_TOKENS)
        _server(server, shape, s["tensor_parallel_size"], s["gpu_memory_utilization"], max_len, s["max_num_seqs"],
                request, capacity, plan.unestimated)
    return plan


def resolved(cfg) -> dict:
    """The training values TRL will run with: skillos's, else TRL's own default (TRL_DEFAULTS)."""
    t = cfg.training
    out = {key: getattr(t, key) if getattr(t, key) is not None else default for key, default in TRL_DEFAULTS.items()}
    out["max_prompt_length"] = t.max_prompt_length  # None: skillos caps nothing (training/common/prompt_cap.py)
    return out


def _training_rank(cfg, shape: Shape, capacity: float | None, rank: Placement, unestimated: list,
                   plan: MemoryPlan) -> None:
    t, c = cfg.training, cfg.compute
    r = resolved(cfg)
    n = max(1, c.num_processes)
    stage, offload_optimizer, offload_params = zero_stage(cfg)
    mixed = bool(r["bf16"])
    deepspeed = bool(c.deepspeed_config)
    psi = shape.params
    if t.lora:
        trainable = shape.lora_params(t.lora)
        if not trainable:
            unestimated.append(f"training.lora target_modules {t.lora.get('target_modules')!r} matches none of the "
                               f"model's linear modules ({', '.join(shape.linears())})")
    else:
        trainable = psi
    # TRL loads a full fine-tune's policy in float32 (its default dtype); DeepSpeed under bf16 casts it to
    # bf16 and keeps an fp32 master copy in its optimizer: 16 bytes per parameter either way, placed
    # differently. A LoRA base under bf16 is loaded in bf16 (training/common/grpo.grpo_kwargs).
    wbytes = 2 if mixed and (deepspeed or t.lora) else 4
    weights, grads, optim = model_states(psi, trainable, n, stage, mixed and deepspeed, offload_optimizer, wbytes)
    if offload_optimizer or offload_params:
        _host(cfg, plan, psi, trainable, n, stage, mixed and deepspeed, wbytes, offload_optimizer, offload_params)
    zero = f"ZeRO-{stage} over {n}" if stage else "no ZeRO: every rank holds all of it"
    rank.parts.append(Part("weights", 0.0 if offload_params else weights / GIB,
                           "offloaded to CPU (DeepSpeed offload_param)" if offload_params else
                           f"{psi / 1e9:.2f}B params x {wbytes} B ({zero if stage >= 3 else 'whole on every rank'})"))
    if r["beta"] and not t.lora:
        rank.parts.append(Part("reference model", 0.0 if offload_params else weights / GIB,
                               "beta != 0: TRL keeps a frozen copy"))
    if t.async_rollouts:  # training/curator/async_rollouts.py: the policy copy that generates the next batch
        rank.parts.append(Part("policy copy", 0.0 if offload_params else weights / GIB,
                               "training.async_rollouts: the next batch is generated by a copy of the policy"))
    rank.parts.append(Part("gradients", grads / GIB,
                           f"{trainable / 1e6:.1f}M trainable" + (" (LoRA)" if t.lora else "")))
    rank.parts.append(Part("optimizer", optim / GIB, "offloaded (DeepSpeed offload_optimizer)" if offload_optimizer
                           else "Adam: " + ("12 B per trainable parameter (fp32 master, m, v)" if mixed and deepspeed
                                            else "8 B per trainable parameter (m, v)")))
    b, completion = r["per_device_train_batch_size"], r["max_completion_length"]
    # the longest sequence a micro-batch holds: prompt + completion, never past what the generator or the
    # model takes (TRL's vLLM: vllm_max_model_length, default the model's; training/curator/pipeline.py caps there)
    seq = min((r["max_prompt_length"] or shape.max_positions) + completion, shape.max_positions)
    completion = min(completion, seq)
    abytes = 2 if mixed else 4
    per_layer = b * seq * shape.hidden * abytes
    checkpointing = bool(r["gradient_checkpointing"])
    layers = (shape.layers + 17) if checkpointing else 17 * shape.layers
    rank.parts.append(Part("activations", per_layer * layers / GIB,
                           f"{b} x {seq} tokens, " + ("checkpointed layer inputs + one layer's 34sbh"
                                                      if checkpointing else "34sbh per layer")))
    rank.parts.append(Part("logits", LOGIT_COPIES * b * completion * shape.vocab * abytes / GIB,
                           f"{LOGIT_COPIES} x {b} x {completion} completion tokens x {shape.vocab} vocab"))
    if not t.use_vllm:  # the training model generates: transformers' KV cache for its share of the batch

        rows = -(-(rollouts_per_generation(cfg) or b) // n)
        rank.parts.append(Part("generation KV cache", rows * seq * shape.kv_bytes_per_token() / GIB,
                               f"no vLLM: {rows} rollouts x {seq} tokens generated by the training model"))
    engines = []
    if t.use_vllm and (t.vllm_mode or "colocate") == "colocate":
        engines.append(("trl vLLM (colocate)", r["vllm_gpu_memory_utilization"], t.vllm_tensor_parallel_size or 1))
    for role in ("executor", "judge"):
        section = getattr(cfg, role)
        entry = BACKENDS.get(section.backend)
        if not (entry and section.model and _runs_in_training(cfg, role)):
            continue
        if entry.gpu_only and entry.local:  # an engine in the process: vLLM takes its share of the whole GPU
            engines.append((f"{role} vLLM (in-process)", VLLM_UTILIZATION, 1))
        elif entry.local:  # hf: the weights, in the process
            shape_r, source = shape_of(section.model)
            if shape_r is None:
                unestimated.append(f"{role}.model: {source}")
            else:
                rank.parts.append(Part(f"{role} weights (in-process)", shape_r.params * shape_r.weight_bytes / GIB,
                                       f"{section.backend} backend"))
    for name, util, tp in engines:
        if capacity is None:
            unestimated.append(f"{name}: {util} of a GPU whose memory is unknown")
            continue
        tokens = _engine(shape, tp, util * capacity)[3]
        rank.parts.append(Part(name, util * capacity, f"gpu_memory_utilization {util}, tensor parallel {tp}"
                               + (f": KV cache {tokens:,} tokens" if name.startswith("trl") else "")))
        if name.startswith("trl") and tokens < seq:
            rank.problems.append(f"TRL's colocated vLLM: its {util} of the GPU leaves a KV cache of {tokens:,} tokens, "
                                 f"less than one {seq:,}-token rollout")
    rank.parts.append(Part("CUDA context", CONTEXT_GIB, "per process"))


def _host(cfg, plan: MemoryPlan, psi: int, trainable: int, n: int, stage: int, mixed: bool, wbytes: int,
          optimizer: bool, params: bool) -> None:
    """What DeepSpeed's offload puts in each machine's CPU memory (the ranks of one machine together:
    their shards of the Adam states, and with offload_param of the weights), against that memory:
    compute.host_ram_gib, else unknown (a WARN: set it)."""
    per_rank = model_states(psi, trainable, n, stage, mixed, False, wbytes)
    ranks = max(1, cfg.compute.num_processes) // max(1, cfg.compute.num_machines)
    offloaded = ((per_rank[2] if optimizer else 0.0) + (per_rank[0] if params else 0.0)) * ranks / GIB
    how = " + ".join(x for x, on in (("the Adam states", optimizer), ("the weights", params)) if on)
    ram, source = cfg.compute.host_ram_gib, "compute.host_ram_gib"
    if ram is None:  # never this machine's: the plan reads the same wherever it is written
        source = "unknown: set compute.host_ram_gib to each machine's memory"
        plan.unestimated.append(f"host memory for {offloaded:.1f} GiB offloaded per machine: {source}")
    plan.host = {"offloaded_gib": round(offloaded, 2), "how": f"{how} of {ranks} rank(s), ZeRO-{stage} over {n}",
                 "ram_gib": ram, "ram_source": source}


def _runs_in_training(cfg, role: str) -> bool:
    """The executor plays every rollout's games in the training process, unless the trained model is
    the executor (a selector trainer); the curator's judge is called there when the content reward is on."""
    trainer = TRAINERS.get(cfg.skillgate.trainer)
    if trainer is not None and trainer.plays_itself:
        return False
    return role == "executor" or bool(cfg.reward.lambda_cnt)


def model_states(params: int, trainable: int, ranks: int, stage: int, mixed: bool, offload: bool = False,
                 weight_bytes: int | None = None) -> tuple[float, float, float]:
    """Bytes per rank of the weights, gradients and Adam states (Rajbhandari et al. 2020, section 3:
    2Ψ + 2Ψ + KΨ in mixed precision with K = 12; 4Ψ + 4Ψ + 8Ψ in fp32); ZeRO stage 1 shards the
    optimizer states over the ranks, 2 the gradients too, 3 the weights too. `weight_bytes`: the
    weights' own width where it is not the mixed-precision one (a bf16 LoRA base without DeepSpeed)."""
    shard = lambda k: ranks if stage >= k else 1  # noqa: E731
    wbytes, gbytes, k = (2, 2, 12) if mixed else (4, 4, 8)
    return (params * (weight_bytes or wbytes) / shard(3), trainable * gbytes / shard(2), 0.0 if offload else trainable * k / shard(1))


def zero_stage(cfg) -> tuple[int, bool, bool]:
    """The DeepSpeed config's ZeRO stage (0 without one) and whether it offloads the optimizer states
    and the parameters (to CPU or NVMe); a file of the wrong shape is a one-line ConfigError."""

    if not cfg.compute.deepspeed_config:
        return 0, False, False
    path = relative_to_config(cfg, cfg.compute.deepspeed_config)
    try:
        ds = json.loads(path.read_text())
    except (OSError, ValueError):
        return 0, False, False  # the deepspeed check reports an unreadable file
    z = ds.get("zero_optimization", {}) if isinstance(ds, dict) else None
    if not isinstance(z, dict):
        raise ConfigError(f"{path.name}: zero_optimization must be a mapping, got {z!r}")
    stage = z.get("stage", 0)
    if isinstance(stage, bool) or stage not in (0, 1, 2, 3):
        raise ConfigError(f"{path.name}: zero_optimization.stage must be 0, 1, 2 or 3, got {stage!r}")
    offloaded = []
    for key in ("offload_optimizer", "offload_param"):
        entry = z.get(key) or {}
        if not isinstance(entry, dict):
            raise ConfigError(f"{path.name}: zero_optimization.{key} must be a mapping such as "
                              f'{{"device": "cpu"}}, got {entry!r}')
        offloaded.append(entry.get("device", "none") in ("cpu", "nvme"))
    return stage, offloaded[0], offloaded[1] and stage == 3


def _engine(shape: Shape, tp: int, budget_gib: float) -> tuple[float, float, float, int]:
    """One GPU of a vLLM engine given `budget_gib` (gpu_memory_utilization x the GPU): its share of
    the weights, the profile run's activations, the KV cache the rest leaves (GiB) and its tokens."""
    weights = shape.params * 2 / tp / GIB
    act = VLLM_BATCHED_TOKENS * (4 * shape.intermediate + 8 * shape.hidden) / tp / GIB
    kv = max(0.0, budget_gib - weights - act - VLLM_OVERHEAD_GIB)
    return weights, act, kv, int(kv * GIB // shape.kv_bytes_per_token(tp))


def _server(p: Placement, shape: Shape, tp: int, util: float, max_len: int, max_seqs: int,
            request: int | None, capacity: float | None, unestimated: list) -> None:
    """One GPU of a vLLM server: weights over tensor parallelism, the profile run, the KV cache; its
    slots (requests held at once, over every data-parallel replica) when a request's tokens are known."""
    if p.gpus % tp:
        p.problems.append(f"{p.gpus} GPUs do not divide into tensor parallel {tp}")
    if capacity is None:
        weights = shape.params * 2 / tp / GIB
        p.parts.append(Part("weights", weights, f"{shape.params / 1e9:.2f}B params x 2 B / tensor parallel {tp}"))
        unestimated.append(f"{p.where}: its KV cache (the rest of {util} of a GPU whose memory is unknown)")
        return
    weights, act, kv, tokens = _engine(shape, tp, util * capacity)
    p.parts += [Part("weights", weights, f"{shape.params / 1e9:.2f}B params x 2 B / tensor parallel {tp}"),
                Part("profile activations", act, f"{VLLM_BATCHED_TOKENS} batched tokens"),
                Part("graphs and non-torch", VLLM_OVERHEAD_GIB, "vLLM's start-up lines"),
                Part("KV cache", kv, f"the rest of gpu_memory_utilization {util}: {tokens:,} tokens")]
    if tokens < max_len:
        p.problems.append(f"its KV cache holds {tokens:,} tokens, less than one max_model_len {max_len:,} "
                          "sequence: vLLM refuses to start")
    if request:
        p.slots = min(max_seqs, tokens // request) * max(1, p.gpus // tp)
