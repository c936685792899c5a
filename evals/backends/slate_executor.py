"""A model executor that plays with a skill slate: it sees the slate's names and descriptions
(not bodies), may call `read_skill(name)` before each action, and answers with one action.

The same prompt text and tool as training (evals/envs/slate.py), so a selector checkpoint is
evaluated on the surface it learned. Each read is recorded with the completion-token count the
episode had generated before it (its position in the token stream) and the tokens it took.
"""

from __future__ import annotations

from typing import Sequence

from skillos.evals.backends.llm_executor import LLMEpisode, LLMExecutor, parse_action
from skillos.evals.envs.slate import READ_TOOL, SLATE_INSTRUCTIONS, Read, tool_schemas

MAX_READS_PER_STEP = 2
class SlateExecutor(LLMExecutor):
    def new_episode(self, task: str, skills) -> "SlateEpisode":
        return SlateEpisode(self, task, skills)


class SlateEpisode(LLMEpisode):
    def __init__(self, executor, task, skills):
        super().__init__(executor, task, skills)
        self.tools = tool_schemas()
        self.by_name = {s.name: s for s in self.skills}
        self.reads: list[Read] = []
        self.completion_tokens = 0
        self.selection_tokens = 0  # tokens of the replies that read a skill

    def prompt(self, observation: str, admissible: Sequence[str]) -> str:
        listing = "\n".join(f"- {s.name}: {s.description}" for s in self.skills)
        text = super().prompt(observation, admissible)
        # The slate replaces the retrieved skills' bodies: reading is the executor's choice.
        head, _, rest = text.partition("Past relevant skills:")
        body = rest.split(f"\n\nStep {self.steps + 1}.", 1)[1]
        return (f"{head}{SLATE_INSTRUCTIONS}\n\nSkill slate (read one with read_skill):\n{listing or '(none)'}"
                f"\n\nStep {self.steps + 1}.{body}")

    def act(self, observation: str, admissible: Sequence[str]) -> str:
        if self.history:
            self.history[-1] = (self.history[-1][0], observation)
        messages = [{"role": "system", "content": "You are an agent in a household text game."},
                    {"role": "user", "content": self.prompt(observation, admissible)}]
        chat = self.executor.chat
        for _ in range(MAX_READS_PER_STEP + 1):
            reply = chat.chat(messages, tools=self.tools)
            tokens = reply.completion_tokens or 0
            calls = [c for c in reply.tool_calls if c["name"] == READ_TOOL]
            acts = [c for c in reply.tool_calls if c["name"] == "act"]
            if not calls or len(self.reads) >= MAX_READS_PER_STEP * (self.steps + 1):
                self.completion_tokens += tokens
                break
            for call in calls:
                name = str(call["arguments"].get("name", ""))
                self.reads.append(Read(name, None, len(self.reads), self.completion_tokens,
                                       self.completion_tokens + tokens))
                skill = self.by_name.get(name)
                result = f"{skill.name}: {skill.description}\n{skill.body}" if skill else \
                    f"error: {name!r} is not on the slate"
                messages += [{"role": "assistant", "content": reply.text},
                             {"role": "user", "content": f"<tool_response>\n{result}\n</tool_response>"}]
            self.completion_tokens += tokens
            self.selection_tokens += tokens
        text = acts[0]["arguments"].get("command", "") if acts else reply.text
        action = parse_action(str(text), admissible)
        self.steps += 1
        chosen = action if action is not None else str(text or "").strip()[:200]
        self.history.append((chosen, ""))
        return chosen
