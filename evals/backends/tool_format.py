"""skillos's tool-call format, for a local model whose chat template does not render tools.

Some real chat templates (SmolLM2-135M-Instruct's, for one) ignore `apply_chat_template(tools=)`:
the model would never see the tools, and a curator run would make zero calls without a word.
For such a template skillos writes the tools into the system message itself, in the Hermes
wording Qwen2.5's template uses, and reads calls back with the same parser every local model's
replies go through (`chat.parse_generated`):

    <tools>
    {"type": "function", "function": {"name": ..., "description": ..., "parameters": {...}}}
    </tools>
    ... <tool_call>{"name": <function-name>, "arguments": <args-json-object>}</tool_call>

Earlier calls and their results, which such a template cannot show either, become text the same
way: an assistant turn's calls as `<tool_call>` blocks, a tool result as a user turn holding a
`<tool_response>` block.

Training renders the same format: a ChatML model (`<|im_start|>`/`<|im_end|>` tokens) whose
template renders no tools trains under TRL's own Qwen2.5 template, which writes exactly this
and which TRL's tool-call parser and multi-turn masks know (`for_training`). A model that is
neither is refused in one line: nothing would parse its calls.
"""

from __future__ import annotations

import json
from skillos.errors import SkillosError

PREAMBLE = ("# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
            "You are provided with function signatures within <tools></tools> XML tags:\n<tools>")
INSTRUCTION = ("</tools>\n\nFor each function call, return a json object with function name and arguments within "
               "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
               "<args-json-object>}\n</tool_call>")
_PROBE = {"type": "function", "function": {"name": "skillos_probe_tool", "description": "probe",
                                           "parameters": {"type": "object", "properties": {}}}}


def renders_tools(tokenizer) -> bool:
    """Whether the tokenizer's chat template shows the model a tool it is given (a probe tool's
    name appears in the rendered prompt)."""
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    try:
        text = tokenizer.apply_chat_template(messages, tools=[_PROBE], add_generation_prompt=True, tokenize=False)
    except Exception:  # noqa: BLE001 - a template that breaks on tools renders none
        return False
    return "skillos_probe_tool" in str(text)


def with_tools(messages: list[dict], tools: list[dict]) -> list[dict]:
    """`messages` with `tools` written into the system message (one added when there is none) and
    every earlier call and tool result as text, for a template that renders neither."""
    block = "\n".join([PREAMBLE, *(json.dumps(_as_function(t), ensure_ascii=False) for t in tools), INSTRUCTION])
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0]["content"] = f"{out[0].get('content') or ''}\n\n{block}".lstrip()
    else:
        out.insert(0, {"role": "system", "content": block})
    return [_as_text(m) for m in out]


def _as_function(tool: dict) -> dict:
    return tool if tool.get("type") == "function" and "function" in tool else {"type": "function", "function": tool}


def _as_text(message: dict) -> dict:
    role = message.get("role")
    if role == "assistant" and message.get("tool_calls"):
        calls = []
        for call in message["tool_calls"]:
            fn = call.get("function", call)
            arguments = fn.get("arguments") or {}
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    pass
            calls.append("<tool_call>\n" + json.dumps({"name": fn.get("name"), "arguments": arguments},
                                                      ensure_ascii=False) + "\n</tool_call>")
        return {"role": "assistant", "content": "\n".join(filter(None, [message.get("content") or "", *calls]))}
    if role == "tool":
        return {"role": "user", "content": f"<tool_response>\n{message.get('content') or ''}\n</tool_response>"}
    return message


def training_tokenizer(path: str):
    """The tokenizer a trainer's rows are rendered with for the model at `path`: `for_training`'s
    where its template renders no tools (the format the trainer will read), else the model's own."""
    from transformers import AutoTokenizer  # heavy and optional: training only

    return for_training(path) or AutoTokenizer.from_pretrained(path)


def for_training(path: str):
    """The tokenizer a trainer gets for the model at `path`, or None where TRL's own load is right
    (its template renders tools); for a ChatML model whose template renders none, that model's
    tokenizer under TRL's Qwen2.5 template (the format above, which TRL parses)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, truncation_side="left")
    if renders_tools(tokenizer):
        return None
    chatml = all(tokenizer.convert_tokens_to_ids(t) not in (None, tokenizer.unk_token_id)
                 for t in ("<|im_start|>", "<|im_end|>"))
    if not chatml:
        raise SkillosError(f"model {path}: its chat template renders no tools and it is not a ChatML model "
                           "(no <|im_start|>/<|im_end|> tokens), so no tool-call format skillos knows would be "
                           "parsed in training; use a model whose template renders tools")
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer
