"""The LLM curator: after each game it reads the trajectory and the repo's skills and edits the
repo with the paper's three tools (new_skill_insert, skill_update, skill_delete), or with
`curate_and_advance(operations)`, the form a curator trained by skillos.training calls. Both go
through `skillos.evals.curation`, the surface training uses. A failed call edits nothing and is
counted (`unmeasured_calls`), never turned into an operation."""

from __future__ import annotations

from skillos.evals.backends.chat import BackendError, make_chat
from skillos.evals.curation import TOOLS, apply_op, curator_input, ops_from_tool_calls

SYSTEM = ("You maintain a repository of skills (short markdown guides) that a household agent "
          "retrieves before each task. After each game, add, rewrite or delete skills so the "
          "agent does better on the next tasks. Call the tools; call none if nothing should change.")


class LLMCurator:
    def __init__(self, config):
        self.chat = make_chat(config)
        self.name = f"{config.backend}:{config.model}"
        self.unmeasured_calls = 0

    def curate(self, trajectory, repo) -> list:
        listing = "\n".join(f"- {s.name}: {s.description}" for s in repo.skills) or "(empty)"
        messages = [{"role": "system", "content": SYSTEM},
                    {"role": "user", "content": f"{curator_input(trajectory)}\n\nCurrent skills:\n{listing}"}]
        try:
            reply = self.chat.chat(messages, tools=TOOLS)
        except BackendError:
            self.unmeasured_calls += 1
            return []
        return [apply_op(repo, op) for op in ops_from_tool_calls(reply.tool_calls)]
