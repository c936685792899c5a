"""A tiny Qwen2-architecture model and tokenizer, built here with no download.

No package ships a small causal LM with its weights and this machine reaches no model hub, so
the CPU run (`training/configs/cpu-smoke.yaml`, `model: tiny-qwen2`) and the hf backend's tests
build one: a byte-level BPE trained with `tokenizers` on the text a curator actually reads and
writes, TRL's own Qwen2.5 chat template verbatim (TRL recognises a template by exact match to
parse `<tool_call>` blocks), and a random-init Qwen2 of ~0.4M parameters. Built once into the
cache ($SKILLOS_CACHE/models/tiny-qwen2) and reused; a build goes to a temporary folder that is
renamed into place, so an interrupted build is never mistaken for a model.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from skillos.errors import SkillosError
from skillos.models import MODELS, folder, models_dir
from skillos.evals.curation import TOOLS
from skillos.evals.envs.alfworld.scenes import TASK_TYPES

TINY_NAME = "tiny-qwen2"
VOCAB_SIZE = 1024
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# The shape: small enough for GRPO on 2 CPU cores (~0.3 s/step), big enough to hold a LoRA.
SHAPE = dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=8192, tie_word_embeddings=True)


def resolve(model: str) -> str:
    """A config's `model:` -> what from_pretrained loads: `tiny-qwen2` is built on first use; a
    named model (skillos.models) is its fetched folder; a folder must hold weights (config.json,
    or adapter_config.json for a LoRA adapter); an `org/name` is looked up in the local hub cache
    only (weights are never downloaded)."""
    if model == TINY_NAME:
        return str(build())
    if model in MODELS:
        return str(folder(model))
    path = Path(model).expanduser()
    if (path / "config.json").is_file() or (path / "adapter_config.json").is_file():
        return str(path)
    if not path.exists() and not model.startswith((".", "/", "~")) and model.count("/") == 1:
        # Look in the hub cache ourselves: from_pretrained asks the network for an adapter
        # config even with local_files_only (~25 s of retries on a machine with no internet).
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(model, "config.json")
        if isinstance(found, str):
            return str(Path(found).parent)
    raise SkillosError(f"model {model!r}: not a weights folder (no config.json or adapter_config.json) "
                       f"and not an org/name in the local hub cache; {TINY_NAME!r} is the tiny CPU model, and "
                       f"`skillos models list` names the real ones skillos can fetch")


def build(seed: int = 0) -> Path:
    """The tiny model's folder, built on first call."""
    final = models_dir() / TINY_NAME
    if (final / "config.json").is_file() and (final / "tokenizer.json").is_file():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".tiny-", dir=final.parent))
    work.chmod(0o755)
    try:
        tokenizer = _tokenizer()
        tokenizer.save_pretrained(work)
        _model(len(tokenizer), tokenizer, seed).save_pretrained(work)
        (work / "skillos.json").write_text(json.dumps({"built_by": "skillos.evals.backends.tiny_model",
                                                      "seed": seed, **SHAPE}, indent=1))
        try:
            work.rename(final)
        except OSError:  # another process finished first: keep theirs
            shutil.rmtree(work, ignore_errors=True)
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return final


def _corpus() -> list[str]:
    """Text in the shapes the model will see: rendered curator inputs, tools and tool calls."""

    calls = [{"name": "curate_and_advance", "arguments": {"operations": [
        {"op": "insert", "skill_name": f"{t.replace('_', '-')}-basics",
         "content": f"How to {t.replace('_', ' ')}: go to each receptacle, open it, take the object, "
                    "then put it in or on the target."}]}} for t in TASK_TYPES]
    lines = [json.dumps(t) for t in TOOLS] + [f"<tool_call>\n{json.dumps(c)}\n</tool_call>" for c in calls]
    lines += [
        "Your task is to: put a clean mug in coffeemachine. You are in the middle of a room.",
        "> go to countertop 1\nOn the countertop 1, you see a mug 1, a knife 2, and a apple 3.",
        "> take mug 1 from countertop 1\nYou pick up the mug 1 from the countertop 1.",
        "> clean mug 1 with sinkbasin 1\nYou clean the mug 1 using the sinkbasin 1.",
        "> open fridge 1\nYou open the fridge 1. The fridge 1 is open. In it, you see a egg 2.",
        "Nothing happens. Result: success. Result: failure. Position 2 of 10. Skills retrieved:",
        "heat cool examine look at lamp desklamp drawer cabinet shelf sofa bed microwave toaster",
        "Operations: (none) - insert ok - update ok - delete ok - invalid operation refused",
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n"
        "<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n",
        "0 1 2 3 4 5 6 7 8 9 10 {\"op\": \"update\", \"new_name\": \"x\", \"new_content\": \"y\"}",
        "<action>go to cabinet 1</action> <think>The mug is probably in a cabinet.</think>",
    ]
    return lines * 4


def _tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    bpe = Tokenizer(models.BPE())
    # Byte-level, no Qwen digit/regex splits: the tokenizer folder is saved as a generic
    # PreTrainedTokenizerFast so transformers loads exactly these rules back (a `qwen2` folder
    # gets its pre-tokenizer rebuilt on load, and the two tokenizations would differ).
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(_corpus(), trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>", model_max_length=SHAPE["max_position_embeddings"])
    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


def _model(vocab_size: int, tokenizer, seed: int):
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=vocab_size, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id, bos_token_id=None, **SHAPE)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model
