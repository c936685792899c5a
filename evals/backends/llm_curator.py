"""The LLM curator: after each game it reads the trajectory and the repo's skills and edits the
repo through `skillos.evals.curation`, the surface training uses, in one of two forms
(`curator.tools`):

* `paper`: the paper's three tools (new_skill_insert, skill_update, skill_delete), one fresh
  prompt per game with the current skill listing;
* `curate_and_advance`: the one tool skillos train publishes, in the conversation shape of a
  training rollout: the first game's input in the user turn, each later game's input in the
  tool response to the previous call, and a fresh conversation every `horizon` games (the
  |G| it was trained on). A curator trained on this surface must be evaluated on it.

A failed call edits nothing and is counted (`unmeasured_calls`), never turned into an operation.
"""

from __future__ import annotations

from skillos.evals.backends.chat import BackendError, make_chat
from skillos.evals.curation import (CURATOR_INSTRUCTIONS, CURATOR_SYSTEM, TOOL_SURFACES, Applied, apply_op,
                                    check_surface, curator_input, ops_from_tool_calls)

DEFAULT_HORIZON = 10  # the paper's |G|


class LLMCurator:
    def __init__(self, config, horizon: int | None = None, system: str | None = None):
        check_surface(config.model, config.tools)
        self.system = system or CURATOR_SYSTEM
        self.chat = make_chat(config)
        self.tools = config.tools
        self.history_length = getattr(config, "history_length", None)  # trajectory steps it reads (None: 30)
        self.name = f"{config.backend}:{config.model}"
        self.horizon = horizon or DEFAULT_HORIZON
        self.unmeasured_calls = 0
        self.last_error: str | None = None
        self._messages: list[dict] = []  # the running conversation (curate_and_advance)
        self._answered: list[tuple] = []  # (call id, its operation lines) awaiting a tool response
        self._games = 0

    def curate(self, trajectory, repo) -> list:
        messages = self._prompt(trajectory, repo)
        try:
            reply = self.chat.chat(messages, tools=TOOL_SURFACES[self.tools])
            if not isinstance(reply.tool_calls, list):
                raise BackendError(f"tool calls are a {type(reply.tool_calls).__name__}, not a list")
        except Exception as exc:  # noqa: BLE001 - an outage or any malformed reply: a failed call
            self.unmeasured_calls += 1
            self.last_error = f"{type(exc).__name__}: {exc}"[:300]
            self._messages = []  # the conversation lost a turn: the next game starts afresh
            return []
        applied, calls = [], []
        if self.tools == "curate_and_advance" and not reply.tool_calls:
            # the surface asks for a call every game (an empty list to change nothing): a reply with
            # no call is a measured invalid operation, as in training, not a missing value
            applied.append(Applied(False, "- no curate_and_advance call in the reply: one invalid operation"))
        for call in reply.tool_calls:
            if not isinstance(call, dict):
                call = {"name": None, "arguments": call}
            results = [apply_op(repo, op) for op in ops_from_tool_calls([call])]
            applied += results
            if not isinstance(call.get("arguments"), dict):  # the wire form needs a mapping
                call = {"name": str(call.get("name")), "arguments": {"_unparsed": str(call.get("arguments"))[:300]}}
            calls.append((f"call_{self._games}_{len(calls)}", call, [a.line for a in results]))
        if self.tools == "curate_and_advance":
            # Canonical form: arguments as a dict (what chat templates render); the API backends
            # convert to their wire format.
            turn = {"role": "assistant", "content": reply.text}
            if calls:
                turn["tool_calls"] = [{"id": cid, "type": "function", "function": {
                    "name": call["name"], "arguments": call["arguments"]}} for cid, call, _ in calls]
            self._messages = messages + [turn]
            self._answered = [(cid, lines) for cid, _, lines in calls]
        return applied

    def _prompt(self, trajectory, repo) -> list[dict]:
        if self.tools == "paper":
            text = curator_input(trajectory, history_length=self.history_length)
            listing = "\n".join(f"- {s.name}: {s.description}" for s in repo.skills) or "(empty)"
            return [{"role": "system", "content": f"{self.system} {CURATOR_INSTRUCTIONS['paper']}"},
                    {"role": "user", "content": f"{text}\n\nCurrent skills:\n{listing}"}]
        self._games += 1
        text = curator_input(trajectory, (self._games - 1) % self.horizon + 1, self.horizon,
                             self.history_length)  # as in training
        if not self._messages or (self._games - 1) % self.horizon == 0:
            return [{"role": "system", "content": self.system},
                    {"role": "user", "content": f"{CURATOR_INSTRUCTIONS['curate_and_advance']}\n\n{text}"}]
        if not self._answered:  # it answered in text last time: the next game is a user turn
            return self._messages + [{"role": "user", "content": text}]
        # One tool response per call, as TRL gives in training; the last carries the next game.
        turns = [{"role": "tool", "tool_call_id": cid, "name": "curate_and_advance",
                  "content": "\n".join(["Operations:"] + (lines or ["(none)"]))} for cid, lines in self._answered]
        turns[-1]["content"] += f"\n\n{text}"
        return self._messages + turns
