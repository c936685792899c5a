"""TRL's private API, in one place: what skillos relies on beyond TRL's public surface.

skillos's GRPO trainers wrap or call GRPOTrainer internals that TRL does not promise to keep:

* methods it wraps or calls (`METHODS`, with the parameters it relies on): the rollout phase and
  the tool loop (training/curator/rollouts.py plays every rollout of a step at once), one generation turn
  and a tool result's tokens (training/curator/pipeline.py plays turns ahead of TRL's loop), the prompt
  tokenizer (training/common/prompt_cap.py cuts prompts to `training.max_prompt_length`), the train
  sampler and the per-token log-probabilities (training/curator/async_rollouts.py reads the epoch's order
  and scores a batch made ahead by the policy copy that made it);
* a module function: `parse_response` (a generated turn back into a message with tool calls);
* instance state read during a step (`ATTRIBUTES`): the environments' tools and the batch's
  environments, the metrics dict, whether the model is a VLM, the vLLM engine;
* per-token advantages: the selector trainer hands the loss (B, T) advantages, which TRL's
  `_compute_loss` takes as they are and only unsqueezes when they are (B,) (`PER_TOKEN`).

They were read from TRL `WRITTEN_FOR`; pyproject pins `PIN` to match. When a trainer class is
built, another TRL is refused (`check_version`: one line naming both versions; not at import, so a
gate check or an eval never needs the pinned TRL), the methods it relies on are checked for their
parameters (`check`: the rollout trainer, the prompt cap) and the selector trainer checks the
per-token path (`check_per_token`), so a TRL
that moved its internals is a one-line error, never a silently different run. `ATTRIBUTES` is
instance state, which no class check can see: it is the list a reader of this module and the
structural test hold the code to.
"""

from __future__ import annotations

import inspect

from skillos.errors import SkillosError

WRITTEN_FOR = (1, 16)
PIN = "trl>=1.16,<1.17"
METHODS = {
    "_generate_and_score_completions": ["self", "inputs"],
    "_tool_call_loop": ["self", "prompts", "prompt_ids", "completion_ids", "completions", "logprobs",
                        "images", "multimodal_fields"],
    "_generate_single_turn": ["self", "prompt_ids", "images", "multimodal_fields", "num_generations",
                              "has_tool_images"],
    "_get_tool_suffix_ids": ["self", "tool_messages"],
    "_tokenize_prompts": ["self", "prompts"],
    "_get_train_sampler": ["self", "dataset"],
    "_get_per_token_logps_and_entropies": ["self", "model", "input_ids", "attention_mask", "logits_to_keep",
                                           "batch_size", "compute_entropy", "compute_aux_loss", "pixel_values",
                                           "image_grid_thw", "num_images", "pixel_attention_mask", "spatial_shapes",
                                           "num_tiles", "image_sizes", "token_type_ids", "mm_token_type_ids",
                                           "image_position_ids"],
}
ATTRIBUTES = ("_env_tools", "_batch_environments", "environment_factories", "_metrics", "_is_vlm",
              "vllm_generation", "max_completion_length", "max_tool_calling_iterations",
              # the asynchronous rollouts' generating copy: its model and its own log containers
              "model_wrapped", "_logs", "_pending_extra_logs", "_pending_metrics", "reward_funcs", "num_iterations")
PER_TOKEN = "if advantages.dim() == 1:"  # _compute_loss's line that leaves (B, T) advantages as they are


def installed() -> str | None:
    """The installed TRL's version, or None when TRL is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trl")
    except PackageNotFoundError:
        return None


def check_version(found: str | None = None) -> None:
    """TRL `WRITTEN_FOR`'s minor, or a one-line SkillosError (no TRL installed: nothing to check)."""
    found = installed() if found is None else found
    if found is None:
        return
    parts = tuple(int(p) for p in found.split(".")[:2] if p.isdigit())
    if parts != WRITTEN_FOR:
        written = ".".join(map(str, WRITTEN_FOR))
        raise SkillosError(f"trl {found} is installed; skillos's GRPO trainers rely on trl {written}'s private API "
                           f"(training/common/trl_compat.py): pip install '{PIN}'")


def check(trainer_cls=None, names=None) -> None:
    """`trainer_cls` (GRPOTrainer by default) has each of METHODS (or `names`) with the parameters
    skillos relies on; else a one-line SkillosError."""
    check_version()
    if trainer_cls is None:
        from trl import GRPOTrainer as trainer_cls
    version = installed()
    for name in names or METHODS:
        member = getattr(trainer_cls, name, None)
        if not callable(member):
            raise SkillosError(f"trl {version}: GRPOTrainer.{name} is missing; skillos relies on it "
                               f"(training/common/trl_compat.py, written for trl {'.'.join(map(str, WRITTEN_FOR))})")
        found = list(inspect.signature(member).parameters)
        if found != METHODS[name]:
            raise SkillosError(f"trl {version}: GRPOTrainer.{name}({', '.join(found)}) is not the "
                               f"({', '.join(METHODS[name])}) skillos relies on (training/common/trl_compat.py, written "
                               f"for trl {'.'.join(map(str, WRITTEN_FOR))})")


def check_per_token(trainer_cls=None) -> None:
    """TRL's loss leaves (B, T) advantages as they are (the selector credit's second stream)."""
    check_version()
    if trainer_cls is None:
        from trl import GRPOTrainer as trainer_cls
    try:
        source = inspect.getsource(trainer_cls._compute_loss)
    except (AttributeError, OSError, TypeError):
        source = ""
    if PER_TOKEN not in source:
        raise SkillosError(f"trl {installed()}: GRPOTrainer._compute_loss no longer takes per-token (B, T) "
                           "advantages as they are; the selector trainer's token-local credit relies on it "
                           "(training/common/trl_compat.py)")


FUSED_HEAD = ["model", "temperature", "cast_lm_head_to_fp32", "outputs"]  # trl.trainer.utils.add_fused_lm_head


def copy_policy(trainer):
    """A deep copy of the trainer's policy that runs on its own weights (training/curator/async_rollouts.py).
    GRPOTrainer.__init__ patches the policy's forward with TRL's fused LM head, a closure over the
    forward it replaced; a deep copy keeps that closure, so its plain forward (all of `generate`)
    would run the original model's weights. The copy's forward is patched again, as TRL patches
    the policy; any module of the copy whose forward still reaches the original is a one-line error."""
    import copy

    from trl.trainer.utils import add_fused_lm_head

    found = list(inspect.signature(add_fused_lm_head).parameters)
    if found != FUSED_HEAD:
        raise SkillosError(f"trl {installed()}: add_fused_lm_head({', '.join(found)}) is not the "
                           f"({', '.join(FUSED_HEAD)}) the policy copy relies on (training/common/trl_compat.py)")
    live = trainer.model
    policy = copy.deepcopy(live)
    base = policy.get_base_model() if hasattr(policy, "get_base_model") else policy
    if "forward" in base.__dict__:  # TRL's fused head: patched again over the copy's own forward
        del base.__dict__["forward"]
        add_fused_lm_head(base, temperature=trainer.temperature, cast_lm_head_to_fp32=trainer.args.cast_lm_head_to_fp32,
                          outputs=("log_probs", "entropy"))
    leaks = reaches(policy, live)
    if leaks:
        raise SkillosError(f"training.async_rollouts: the policy copy's {leaks[0]}.forward still runs the trained "
                           f"model (a patch skillos does not know how to copy, trl {installed()}); turn async_rollouts off")
    return policy


def reaches(copied, original) -> list[str]:
    """The modules of `copied` whose patched forward or forward hooks hold a module (or a method of
    one) of `original`: in a closure, a nested function's closure, or a functools.partial."""
    originals = {id(m) for m in original.modules()}
    out = []
    for name, module in copied.named_modules():
        patched = [module.__dict__.get("forward"), *module._forward_hooks.values(),
                   *module._forward_pre_hooks.values()]
        if any(_holds(f, originals, 0) for f in patched if f is not None):
            out.append(name or type(module).__name__)
    return out


def _holds(value, originals: set, depth: int) -> bool:
    import functools

    if id(getattr(value, "__self__", value)) in originals:
        return True
    if depth > 3:
        return False
    if isinstance(value, functools.partial):
        inner = [value.func, *value.args, *value.keywords.values()]
    else:
        cells = getattr(getattr(value, "__func__", value), "__closure__", None) or ()
        inner = [cell.cell_contents for cell in cells]
    return any(_holds(v, originals, depth + 1) for v in inner if callable(v) or hasattr(v, "__self__")
               or id(v) in originals)


def parse_response(tokenizer, ids, prefix, tools):
    """TRL's own parser of a generated turn (a message with its tool calls)."""
    from trl.trainer.grpo_trainer import parse_response as parse

    return parse(tokenizer, ids, prefix=prefix, tools=tools)



def published_tools(cls) -> list[str]:
    """The methods TRL would publish as tools: every public method but reset (and get_reward)."""
    return sorted(name for name, member in inspect.getmembers(cls, inspect.isfunction)
                  if not name.startswith("_") and name not in ("reset", "get_reward"))
