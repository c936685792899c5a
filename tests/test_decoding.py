"""Decoding and reasoning as configured, in every backend: temperature, top_p, top_k, max_tokens
and reasoning_effort reach each backend's request or sampling call (over real HTTP for the API
backends; the real call path with a recording model or engine for hf and vllm), or the config is
refused for that backend in one line."""

import sys
import types

import pytest

from conftest import ROOT, run_cli
from llm_server import ScriptedLLM
from skillos import config
from skillos.config import CuratorConfig
from skillos.errors import ConfigError, SkillosError
from skillos.evals.backends.chat import make_chat, sent

DECODING = dict(temperature=0.6, top_p=0.95, top_k=20, max_tokens=4096)
PAPER = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"


@pytest.fixture
def llm(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with ScriptedLLM(lambda messages: "ok") as server:
        yield server


def test_openai_sends_every_decoding_field_in_the_request_body(llm):
    cfg = CuratorConfig(backend="openai", model="Qwen3-8B", base_url=llm.openai_url, reasoning_effort="high",
                        timeout_s=2, **DECODING)
    make_chat(cfg).chat([{"role": "user", "content": "hi"}])
    body = llm.calls[-1]["body"]
    assert {k: body.get(k) for k in (*DECODING, "reasoning_effort")} == {**DECODING, "reasoning_effort": "high"}
    assert {k: v[1] for k, v in sent(cfg).items()} == {"model": "Qwen3-8B", **DECODING, "reasoning_effort": "high"}
    body_low = make_chat(CuratorConfig(backend="openai", model="m", base_url=llm.openai_url, timeout_s=2,
                                       temperature=0.1))
    body_low.chat([{"role": "user", "content": "hi"}])
    assert llm.calls[-1]["body"]["temperature"] == 0.1 and "top_k" not in llm.calls[-1]["body"]


def test_anthropic_sends_sampling_and_a_thinking_budget(llm):
    plain = CuratorConfig(backend="anthropic", model="claude", base_url=llm.anthropic_url, timeout_s=2, **DECODING)
    make_chat(plain).chat([{"role": "user", "content": "hi"}])
    body = llm.calls[-1]["body"]
    assert {k: body.get(k) for k in DECODING} == DECODING and "thinking" not in body
    thinking = CuratorConfig(backend="anthropic", model="claude", base_url=llm.anthropic_url, timeout_s=2,
                             reasoning_effort="medium", max_tokens=8192)
    make_chat(thinking).chat([{"role": "user", "content": "hi"}])
    body = llm.calls[-1]["body"]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096} and body["max_tokens"] == 8192
    assert sent(thinking)["reasoning_effort"][1] == "medium"
    high = CuratorConfig(backend="anthropic", model="claude", reasoning_effort="high")  # max_tokens unset
    assert sent(high)["max_tokens"][1] > 16384  # the whole budget fits, never silently cut


class _Tokenizer:
    chat_template = "{% if enable_thinking %}<think>{% endif %}"
    pad_token_id, eos_token_id = 0, 1

    def __init__(self):
        self.template_kwargs = None

    def apply_chat_template(self, messages, **kwargs):
        self.template_kwargs = kwargs
        return "prompt"

    def __call__(self, text, return_tensors=None, add_special_tokens=False):
        import torch

        class Batch(dict):
            def to(self, device):
                return self
        return Batch(input_ids=torch.tensor([[5, 6]]))

    def decode(self, ids, skip_special_tokens=True):
        return "<think>hm</think>answer"


class _Net:
    device = "cpu"

    def __init__(self):
        self.kwargs = None

    def generate(self, **kwargs):
        import torch

        self.kwargs = kwargs
        return torch.tensor([[5, 6, 7, 1]])

    def to(self, device):
        return self

    def eval(self):
        return self


def test_hf_passes_sampling_to_generate_and_thinking_to_the_chat_template(monkeypatch):
    from skillos.evals.backends import hf_chat

    tok, net = _Tokenizer(), _Net()
    monkeypatch.setattr(hf_chat, "load_weights", lambda model: (net, tok, model))
    chat = hf_chat.HFChat(CuratorConfig(backend="hf", model="qwen3-local", reasoning_effort="on", **DECODING))
    result = chat.chat([{"role": "user", "content": "hi"}])
    assert tok.template_kwargs["enable_thinking"] is True and result.reasoning == "hm"
    assert {k: net.kwargs[k] for k in ("temperature", "top_p", "top_k")} == {"temperature": 0.6, "top_p": 0.95,
                                                                             "top_k": 20}
    assert net.kwargs["max_new_tokens"] == 4096 and net.kwargs["do_sample"] is True
    hf_chat.HFChat(CuratorConfig(backend="hf", model="m", reasoning_effort="none")).chat([{"role": "user", "content": "x"}])
    assert tok.template_kwargs["enable_thinking"] is False
    hf_chat.HFChat(CuratorConfig(backend="hf", model="m")).chat([{"role": "user", "content": "x"}])
    assert "enable_thinking" not in tok.template_kwargs  # unset: the template's own default


def test_hf_refuses_thinking_on_a_template_without_the_switch(monkeypatch):
    from skillos.evals.backends import hf_chat

    tok = _Tokenizer()
    tok.chat_template = "{{ messages }}"  # the tiny model's kind: no enable_thinking
    monkeypatch.setattr(hf_chat, "load_weights", lambda model: (_Net(), tok, model))
    with pytest.raises(SkillosError, match="enable_thinking switch"):
        hf_chat.HFChat(CuratorConfig(backend="hf", model="tiny", reasoning_effort="on"))
    hf_chat.HFChat(CuratorConfig(backend="hf", model="tiny"))  # unset: nothing to refuse


def test_vllm_passes_sampling_params_and_chat_template_kwargs(monkeypatch):
    seen = {}

    class SamplingParams:
        def __init__(self, **kwargs):
            seen["sampling"] = kwargs

    class Output:
        text, token_ids = "<think>x</think>done", [1, 2]

    class LLM:
        def __init__(self, **kwargs):
            seen["engine"] = kwargs

        def get_tokenizer(self):
            return types.SimpleNamespace(chat_template="{% if enable_thinking %}{% endif %}")

        def chat(self, messages, params, **kwargs):
            seen["chat"] = kwargs
            return [types.SimpleNamespace(outputs=[Output()], prompt_token_ids=[1, 2, 3])]

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams))
    from skillos.evals.backends import vllm_chat

    monkeypatch.setattr("skillos.evals.backends.vllm_chat.resolve", lambda model: model)
    cfg = CuratorConfig(backend="vllm", model="Qwen/Qwen3-8B", reasoning_effort="on", **DECODING)
    result = vllm_chat.VLLMChat(cfg).chat([{"role": "user", "content": "hi"}])
    assert seen["sampling"] == DECODING
    assert seen["chat"]["chat_template_kwargs"] == {"enable_thinking": True}
    assert result.text == "done" and result.reasoning == "x"
    off = CuratorConfig(backend="vllm", model="Qwen/Qwen3-8B", reasoning_effort="none", temperature=0.7)
    vllm_chat.VLLMChat(off).chat([{"role": "user", "content": "hi"}])
    assert seen["chat"]["chat_template_kwargs"] == {"enable_thinking": False} and seen["sampling"]["temperature"] == 0.7


@pytest.mark.parametrize("sets, message", [
    (["executor.backend=vllm", "executor.reasoning_effort=medium"], "has no meaning for backend vllm"),
    (["executor.reasoning_effort=maximal"], "is not one of"),
    (["executor.backend=vllm", "executor.temperature=0", "executor.top_p=0.9"], "greedy decoding"),
    (["executor.base_url=null", "executor.reasoning_effort=high"], "the OpenAI API has no top_k"),
    (["executor.base_url=null", "executor.reasoning_effort=on"], "takes low, medium, high or none"),
    (["judge.backend=anthropic", "judge.reasoning_effort=high", "judge.temperature=0.6"], "extended thinking"),
    (["judge.backend=anthropic", "judge.reasoning_effort=high", "judge.temperature=null", "judge.top_p=null",
      "judge.top_k=null", "judge.max_tokens=8192"], "leaves no room"),
])
def test_a_setting_a_backend_cannot_carry_is_refused_in_one_line(sets, message):
    with pytest.raises(ConfigError, match=message):
        config.with_sets(config.load(PAPER), sets)
    out = run_cli("gate", "check", PAPER, *[x for s in sets for x in ("--set", s)])
    assert out.returncode == 2 and message.split()[0] in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_yaml_on_and_off_read_as_the_thinking_switch(tmp_path):
    text = PAPER.read_text().replace("reasoning_effort: on    #", "reasoning_effort: off    #", 1)
    (tmp_path / "c.yaml").write_text(text)
    (tmp_path / "zero3-offload.json").write_text((ROOT / "training" / "configs" / "zero3-offload.json").read_text())
    assert config.load(tmp_path / "c.yaml").executor.reasoning_effort == "none"
    assert config.load(PAPER).executor.reasoning_effort == "on"
