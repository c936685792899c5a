"""The blocked sliding-window attention (evals/backends/windowed_attention.py): sdpa's numbers, and
every path that loads a windowed model (GRPO's policy and reference, the warm start, evaluation) uses it."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from skillos.config.loading import load, with_sets
from skillos.evals.backends import windowed_attention
from skillos.evals.backends.hf_chat import load_weights
from skillos.evals.backends.tiny_model import build
from skillos.training.common.grpo import build_args, grpo_kwargs
from skillos.training.common.warmup import window_kwargs

WINDOW = 16


@pytest.fixture(scope="module")
def windowed_folder(tmp_path_factory):
    """The tiny model with every layer attending to its last WINDOW tokens, saved as a canary's warm start is."""
    base = str(build())
    net = AutoModelForCausalLM.from_pretrained(base, **window_kwargs(base, WINDOW))
    folder = tmp_path_factory.mktemp("windowed")
    net.save_pretrained(folder)
    AutoTokenizer.from_pretrained(base).save_pretrained(folder)
    return folder


def _batch(length: int):
    torch.manual_seed(1)
    ids = torch.randint(3, 500, (3, length))
    mask = torch.ones(3, length, dtype=torch.long)
    mask[0, :37] = 0  # left padding, as TRL pads prompts
    mask[1, :5] = 0
    return ids, mask


@pytest.mark.parametrize("length", [WINDOW * 2 + 1, WINDOW * 6 + 7, WINDOW * 8])  # one block past sdpa's; ragged; even
def test_blocked_attention_gives_sdpas_logits_and_gradients(windowed_folder, length):
    net = AutoModelForCausalLM.from_pretrained(windowed_folder, **windowed_attention.load_kwargs(windowed_folder))
    ids, mask = _batch(length)
    results = {}
    for implementation in ("sdpa", windowed_attention.NAME):
        net.set_attn_implementation(implementation)
        net.zero_grad()
        logits = net(input_ids=ids, attention_mask=mask).logits
        logits.log_softmax(-1)[mask.bool()][:, 7].sum().backward()
        results[implementation] = logits.detach(), [p.grad.clone() for p in net.parameters()]
    (sdpa, sdpa_grads), (blocked, blocked_grads) = results["sdpa"], results[windowed_attention.NAME]
    real = mask.bool()
    assert torch.allclose(sdpa[real], blocked[real], atol=1e-4)
    for a, b in zip(sdpa_grads, blocked_grads):
        assert torch.allclose(a, b, atol=1e-4, rtol=1e-3)


def test_blocking_that_skipped_an_allowed_key_would_be_caught(windowed_folder):
    """The comparison above can fail: a window one block short of what it must cover changes the logits."""
    net = AutoModelForCausalLM.from_pretrained(windowed_folder, **windowed_attention.load_kwargs(windowed_folder))
    ids, mask = _batch(WINDOW * 6 + 7)
    blocked = windowed_attention.blocked_attention
    net.set_attn_implementation("sdpa")
    sdpa = net(input_ids=ids, attention_mask=mask).logits.detach()

    def short(module, query, key, value, attention_mask, sliding_window=None, **kwargs):
        return blocked(module, query, key, value, attention_mask, sliding_window=sliding_window // 2, **kwargs)

    from transformers import AttentionInterface
    AttentionInterface.register(windowed_attention.NAME, short)
    try:
        net.set_attn_implementation(windowed_attention.NAME)
        wrong = net(input_ids=ids, attention_mask=mask).logits.detach()
    finally:
        windowed_attention.windowed()  # registered again as shipped
    assert not torch.allclose(sdpa[mask.bool()], wrong[mask.bool()], atol=1e-4)


def test_only_a_model_with_a_window_loads_with_it(windowed_folder, tmp_path):
    assert windowed_attention.load_kwargs(windowed_folder) == {"attn_implementation": windowed_attention.NAME}
    plain = json.loads((build() / "config.json").read_text())
    assert not plain.get("use_sliding_window")
    assert windowed_attention.load_kwargs(build()) == {}
    assert windowed_attention.load_kwargs("Qwen/Qwen3-8B") == {}  # a hub name: loads as it would
    assert windowed_attention.load_kwargs(None) == {}
    (tmp_path / "config.json").write_text("{not json")
    assert windowed_attention.load_kwargs(tmp_path) == {}


def test_every_path_that_loads_a_windowed_model_uses_it(windowed_folder, tmp_path):
    cfg = load("training/configs/cpu-smoke.yaml")
    args = build_args(cfg, cpu=True, model=str(windowed_folder))  # the folder the trainer is handed
    assert args.model_init_kwargs["attn_implementation"] == windowed_attention.NAME  # policy and reference
    assert not build_args(cfg, cpu=True, model=str(build())).model_init_kwargs  # the plain tiny model: as before
    assert "model_init_kwargs" not in grpo_kwargs(cfg, cpu=True)  # what the gates trace loads nothing
    from skillos.training.selector.grpo import build_args as selector_args
    selector = selector_args(load("training/configs/selector-cpu.yaml"), True, tmp_path, model=str(windowed_folder))
    assert selector.model_init_kwargs["attn_implementation"] == windowed_attention.NAME
    net, _, _ = load_weights(str(windowed_folder))  # evaluation (the hf backend)
    assert net.config._attn_implementation == windowed_attention.NAME
    base = str(build())
    assert window_kwargs(base, WINDOW)["attn_implementation"] == windowed_attention.NAME  # the warm start
    assert window_kwargs(base, None) == {}


def test_a_lora_launch_keeps_its_dtype_beside_the_attention(windowed_folder):
    cfg = with_sets(load("training/configs/cpu-smoke.yaml"), ["training.lora.r=4"])
    args = build_args(cfg, cpu=False, model=str(windowed_folder), extra={"use_cpu": True})
    assert args.model_init_kwargs == {"dtype": "bfloat16", "attn_implementation": windowed_attention.NAME}


def test_generation_with_a_cache_gives_sdpas_tokens(windowed_folder):
    """Generating prefills the prompt (blocked) and then reads a cache (sdpa's call): greedy tokens agree."""
    net = AutoModelForCausalLM.from_pretrained(windowed_folder, **windowed_attention.load_kwargs(windowed_folder))
    ids, mask = _batch(WINDOW * 5 + 3)
    drawn = {}
    for implementation in ("sdpa", windowed_attention.NAME):
        net.set_attn_implementation(implementation)
        drawn[implementation] = net.generate(input_ids=ids, attention_mask=mask, max_new_tokens=3 * WINDOW,
                                             do_sample=False, pad_token_id=0)
    assert torch.equal(drawn["sdpa"], drawn[windowed_attention.NAME])


def _completion_logits(net, prompt, completion):
    ids = torch.cat([prompt, completion]).unsqueeze(0)
    return net(input_ids=ids).logits[0, len(prompt) - 1:-1]  # the logits that score the completion's tokens


def test_a_prompt_cut_to_the_models_reach_gives_every_completion_token_the_same_logits(windowed_folder):
    net = AutoModelForCausalLM.from_pretrained(windowed_folder, **windowed_attention.load_kwargs(windowed_folder))
    reach = windowed_attention.reach(net.config)
    assert reach == net.config.num_hidden_layers * (WINDOW - 1) + 1
    torch.manual_seed(2)
    prompt, completion = torch.randint(3, 500, (5 * reach,)), torch.randint(3, 500, (3 * WINDOW,))
    whole = _completion_logits(net, prompt, completion)
    assert torch.allclose(whole, _completion_logits(net, prompt[-reach:], completion), atol=1e-4)
    # one token less than the reach: the first completion token's logits change (the bound is tight)
    shorter = _completion_logits(net, prompt[-(reach - 1):], completion)
    assert not torch.allclose(whole[0], shorter[0], atol=1e-4)


def test_only_a_model_windowed_in_every_layer_has_a_reach(windowed_folder):
    from transformers import AutoConfig

    assert windowed_attention.reach(AutoConfig.from_pretrained(build())) is None
    config = AutoConfig.from_pretrained(windowed_folder)
    assert windowed_attention.reach(config) is not None
    for key, value in (("layer_types", ["sliding_attention", "full_attention"]), ("is_causal", False),
                       ("rope_parameters", {"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0})):
        changed = AutoConfig.from_pretrained(windowed_folder)
        setattr(changed, key, value)
        assert windowed_attention.reach(changed) is None, key
    assert windowed_attention.reach(None) is None


def test_a_window_that_is_not_causal_is_sdpas_call(windowed_folder):
    """Blocks assume the window looks back only; a two-sided one (is_causal False) goes to sdpa whole."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    torch.manual_seed(3)
    length = WINDOW * 5
    query, key, value = (torch.randn(1, 2, length, 8) for _ in range(3))
    positions = torch.arange(length)
    two_sided = ((positions[:, None] - positions[None, :]).abs() < WINDOW)[None, None]
    module = type("Attention", (), {"is_causal": False, "num_key_value_groups": 1, "training": False})()
    blocked, _ = windowed_attention.blocked_attention(module, query, key, value, two_sided, sliding_window=WINDOW)
    whole, _ = sdpa_attention_forward(module, query, key, value, two_sided, sliding_window=WINDOW)
    assert torch.allclose(blocked, whole, atol=1e-5)


def test_the_trainer_passes_a_windowed_model_no_prompt_token_it_cannot_read(windowed_folder):
    """The cut to the reach is the trainer's prompt code (PromptCap), and it is not counted as a truncation."""
    from transformers import AutoConfig

    from skillos.training.common.prompt_cap import capped

    config = AutoConfig.from_pretrained(windowed_folder)
    reach = windowed_attention.reach(config)

    class Base:  # TRL's method, as the trainer class calls it
        def __init__(self, limit, model_config):
            self.args = type("A", (), {"max_prompt_length": limit})()
            self.model = type("M", (), {"training": True, "config": model_config})()
            self._metrics = {"train": {"prompts/truncated": []}, "eval": {}}

        def _tokenize_prompts(self, prompts):
            return [list(range(n)) for n in prompts], None, {}

    trainer = capped(Base)(None, config)
    ids, _, _ = trainer._tokenize_prompts([reach + 40, 5])
    assert ids == [list(range(40, reach + 40)), list(range(5))] and trainer.truncated_prompts == 0
    limited = capped(Base)(reach - 10, config)  # a cap below the reach still cuts, and counts
    assert [len(i) for i in limited._tokenize_prompts([reach + 40, 5])[0]] == [reach - 10, 5]
    assert limited.truncated_prompts == 1
    assert capped(Base)(None, AutoConfig.from_pretrained(build()))._tokenize_prompts([900])[0] == [list(range(900))]
