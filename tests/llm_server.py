"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions and the Anthropic
messages protocols, so the real SDKs make real calls in tests. Replies come from a policy
(messages -> text); failures are injected per call (HTTP status or a stall past the client's
timeout), or for a window of calls (an outage)."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFERRED = ("take", "put", "move", "clean", "heat", "cool", "use", "open", "go to")


def admissible_from(prompt: str) -> list[str]:
    block = prompt.split("Admissible actions:", 1)[-1]
    lines = []
    for line in block.strip().splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return lines


def alfworld_policy(messages: list[dict]) -> str:
    """A deterministic player: the first admissible action by verb preference, cycling through
    `go to` targets by step so it explores."""
    prompt = messages[-1]["content"]
    actions = admissible_from(prompt)
    step = int((re.search(r"Step (\d+)\.", prompt) or [0, 1])[1])
    for verb in PREFERRED:
        matching = [a for a in actions if a.startswith(verb)]
        if matching:
            return f"I will {verb}. <action>{matching[step % len(matching)]}</action>"
    return f"<action>{actions[0] if actions else 'look'}</action>"


class ScriptedLLM:
    def __init__(self, policy=alfworld_policy):
        self.policy = policy
        self.failures: deque = deque()  # per call: an HTTP status, or "stall"
        self.outage = False  # while True every call gets a 503
        self.stall_s = 5.0
        self.latency_s = 0.0  # added to every reply
        self.models = ["Qwen3-8B", "claude-test"]  # what GET /models lists
        self.calls: list[dict] = []
        self._lock = threading.Lock()
        ThreadingHTTPServer.request_queue_size = 256  # 64 clients at once must not be refused
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        llm = self

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive, as vLLM's and the hosted APIs' servers do: HTTP/1.0 (the default) opened
            # a TCP connection per call. No Nagle: headers and body must not wait for an ACK.
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_GET(self):  # the model list, which `skillos doctor` asks for
                if llm.outage:
                    return self._send(503, {"error": {"message": "injected 503", "type": "server_error"}})
                if self.path.endswith("/models"):
                    return self._send(200, {"object": "list", "data": [
                        {"id": m, "object": "model", "created": 0, "owned_by": "test", "type": "model",
                         "display_name": m, "created_at": "2026-01-01T00:00:00Z"} for m in llm.models],
                        "has_more": False, "first_id": llm.models[0], "last_id": llm.models[-1]})
                return self._send(404, {"error": {"message": "no such path"}})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with llm._lock:
                    llm.calls.append({"path": self.path, "body": body})
                    failure = llm.failures.popleft() if llm.failures else None
                    if llm.outage:
                        failure = 503
                if llm.latency_s:
                    time.sleep(llm.latency_s)
                if failure == "stall":
                    time.sleep(llm.stall_s)
                elif failure is not None:
                    return self._send(failure, {"error": {"message": f"injected {failure}",
                                                          "type": "server_error"}})
                messages = body.get("messages", [])
                broken = _protocol_error(self.path, messages)
                if broken:  # what the real APIs refuse with a 400
                    return self._send(400, {"error": {"message": broken, "type": "invalid_request_error"}})
                if self.path.endswith("/messages") and body.get("system"):
                    messages = [{"role": "system", "content": body["system"]}, *messages]
                reply = llm.policy(messages)  # text, or {"content": text, "tool_calls": [...]}
                text = reply if isinstance(reply, str) else reply.get("content", "")
                calls = [] if isinstance(reply, str) else reply.get("tool_calls", [])
                if self.path.endswith("/chat/completions"):
                    message = {"role": "assistant", "content": text}
                    if calls:
                        message["tool_calls"] = [
                            {"id": f"call{i}", "type": "function",
                             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
                            for i, c in enumerate(calls)]
                    return self._send(200, {
                        "id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": "tool_calls" if calls else "stop",
                                     "message": message}],
                        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
                if self.path.endswith("/messages"):
                    content = [{"type": "text", "text": text}] if text else []
                    content += [{"type": "tool_use", "id": f"tu{i}", "name": c["name"],
                                 "input": c["arguments"]} for i, c in enumerate(calls)]
                    return self._send(200, {
                        "id": "m1", "type": "message", "role": "assistant", "model": body["model"],
                        "content": content, "stop_reason": "tool_use" if calls else "end_turn",
                        "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 7}})
                return self._send(404, {"error": {"message": "no such path"}})

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.send_header("retry-after-ms", "5")  # keep the SDKs' backoff short in tests
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a stall past its timeout)

        return Handler


def _protocol_error(path: str, messages: list) -> str | None:
    """The tool-call rules both APIs enforce: every tool response answers a call the assistant
    made just before it, by id; OpenAI tool-call arguments are JSON strings."""
    open_ids = set()
    for m in messages:
        if path.endswith("/chat/completions"):
            if m.get("role") == "assistant":
                open_ids = set()
                for c in m.get("tool_calls") or []:
                    if not isinstance(c["function"]["arguments"], str):
                        return "tool_calls[].function.arguments must be a string"
                    open_ids.add(c["id"])
            elif m.get("role") == "tool":
                if m.get("tool_call_id") not in open_ids:
                    return f"tool message answers no tool call: {m.get('tool_call_id')!r}"
                open_ids.discard(m["tool_call_id"])
            elif open_ids:
                return "tool calls left unanswered"
        else:
            blocks = m["content"] if isinstance(m.get("content"), list) else []
            if m.get("role") == "assistant":
                open_ids = {b["id"] for b in blocks if b.get("type") == "tool_use"}
            elif m.get("role") == "user":
                for b in blocks:
                    if b.get("type") == "tool_result":
                        if b["tool_use_id"] not in open_ids:
                            return f"tool_result answers no tool_use: {b['tool_use_id']!r}"
                        open_ids.discard(b["tool_use_id"])
                if open_ids:
                    return "tool_use blocks left unanswered"
            if m.get("role") not in ("user", "assistant"):
                return f"role {m.get('role')!r} is not allowed"
    return None
