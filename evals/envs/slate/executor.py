"""A model executor that plays with a skill slate, in the conversation shape of training: the
selector system prompt, the slate's names and descriptions (not bodies), the scene and the
admissible actions; tools `read_skill(name)` and `act(command)` with the schemas TRL builds from
SlateEnv; tool results rendered by the same functions as SlateEnv's. So a selector checkpoint is
evaluated on the surface it learned.

Each read is recorded with the completion tokens the episode had generated before it (its
position in the token stream) and after it. A reply with no tool call is parsed as an action
(parse_action); a non-admissible one is counted as coerced by the runner.
"""

from __future__ import annotations

from typing import Sequence

from skillos.evals.envs.household.llm import LLMExecutor, parse_action
from skillos.evals.envs.slate import slates
from skillos.evals.envs.slate.slates import READ_TOOL, Read

MAX_READS_PER_STEP = 2


def opening(slate_text: str, observation: str, admissible) -> list[dict]:
    """The first messages of an episode, exactly as sent: the selector system prompt
    (`envs/slate/slates.py:SYSTEM`, read at send time), the instructions and the first input."""
    return [{"role": "system", "content": slates.SYSTEM},
            {"role": "user", "content": slates.SLATE_INSTRUCTIONS + "\n\n"
             + slates.first_input(slate_text, observation, admissible)}]


def read_result(skill, name: str) -> str:
    """What a read_skill call returns to the model (the skill, or why it cannot be read)."""
    return f"{skill.name}: {skill.description}\n{skill.body}".strip() if skill else f"error: {name!r} is not on the slate"


def sent_templates() -> dict:
    """Every fixed byte the executor sends, rendered by the functions that send them with
    placeholders where a game's text goes: the eval protocol's prompt pin hashes this, so a change
    to the system prompt, the instructions or any template changes the pin."""
    from types import SimpleNamespace

    skill = SimpleNamespace(name="{skill}", description="{description}", body="{body}")
    return {"opening": opening(slates.listing([skill]), "{observation}", ["{action}"]),
            "step_result": slates.step_result("{observation}", False, ["{action}"]),
            "read_result": [read_result(skill, "{skill}"), read_result(None, "{name}")]}


def tools_sent() -> list[dict]:
    """The tool schemas every call sends (what the protocol's tool-schema pin hashes)."""
    return slates.tool_schemas()


class SlateExecutor(LLMExecutor):
    decodings = ("generate",)  # its turns are tool calls (read_skill, act): nothing to score

    def new_episode(self, task: str, skills) -> "SlateEpisode":
        return SlateEpisode(self, task, skills)


class SlateEpisode:
    def __init__(self, executor, task, skills):
        self.executor, self.task, self.skills = executor, task, list(skills)
        self.by_name = {s.name: s for s in self.skills}
        self.tools = tools_sent()
        self.messages: list[dict] = []
        self.reads: list[Read] = []
        self.completion_tokens = 0
        self.selection_tokens = 0  # tokens of the replies that called read_skill
        self.pending_act = None  # the id of the act() call the next observation answers
        self.calls = 0

    def act(self, observation: str, admissible: Sequence[str]) -> str:
        if not self.messages:
            self.messages = opening(slates.listing(self.skills), observation, admissible)
        elif self.pending_act is not None:
            self.messages.append({"role": "tool", "tool_call_id": self.pending_act, "name": "act",
                                  "content": slates.step_result(observation, False, admissible)})
        self.pending_act = None
        reads_now = 0
        while True:
            reply = self.executor.chat.chat(self.messages, tools=self.tools)
            tokens = reply.completion_tokens or 0
            start = self.completion_tokens
            self.completion_tokens += tokens
            reads = [c for c in reply.tool_calls if c["name"] == READ_TOOL]
            acts = [c for c in reply.tool_calls if c["name"] == "act"][:1]  # one action per turn
            ids = [f"call_{self.calls + i}" for i in range(len(reads) + len(acts))]
            self.calls += len(ids)
            message = {"role": "assistant", "content": reply.text}
            if ids:  # every call kept is answered: reads now, the action by the next observation
                message["tool_calls"] = [{"id": cid, "type": "function", "function": {
                    "name": c["name"], "arguments": c["arguments"]}} for cid, c in zip(ids, reads + acts)]
            self.messages.append(message)
            for cid, call in zip(ids, reads):
                name = str(call["arguments"].get("name", ""))
                self.reads.append(Read(name, None, len(self.reads), start, self.completion_tokens))
                result = read_result(self.by_name.get(name), name)
                self.messages.append({"role": "tool", "tool_call_id": cid, "name": READ_TOOL, "content": result})
            if reads:
                self.selection_tokens += tokens
                reads_now += len(reads)
            if acts:
                self.pending_act = ids[-1]
                text = str(acts[0]["arguments"].get("command", ""))
                break
            if not reads or reads_now >= MAX_READS_PER_STEP:
                text = reply.text
                break
        action = parse_action(text, admissible)
        return action if action is not None else text.strip()[:200]
