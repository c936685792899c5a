"""The curator's tool surface, shared by evaluation and training so a curator is evaluated with
the tools it was trained on (the reference trained on one surface and evaluated with another).

Two forms of the same operations:
* the paper's three tools, `new_skill_insert`, `skill_update`, `skill_delete` (eval curators);
* `curate_and_advance(operations)` with operations `{op: insert|update|delete, skill_name,
  content?, new_name?, new_content?}` (the training environment's one tool).
`ops_from_tool_calls` maps either to the list form; `apply_op` applies one to a skill repo and
says what happened in one line. A `Capacity` bounds what the repo may tell the executor: a write
past it is refused like any other, and the repo is left as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from skillos.repo import SkillRepo, parse_skill
from skillos.repo.skill import SkillError
from skillos.errors import SkillosError
from skillos.safety import read_json_file

OPS = ("insert", "update", "delete")
TRAJECTORY_STEPS_SHOWN = 30

TOOLS = [
    {"type": "function", "function": {
        "name": "new_skill_insert",
        "description": "Add a new skill to the repo.",
        "parameters": {"type": "object", "required": ["skill_name", "content"], "properties": {
            "skill_name": {"type": "string", "description": "lowercase-hyphenated name"},
            "content": {"type": "string", "description": "SKILL.md text, or markdown whose first "
                        "line is the description"}}}}},
    {"type": "function", "function": {
        "name": "skill_update",
        "description": "Rewrite (and optionally rename) an existing skill.",
        "parameters": {"type": "object", "required": ["skill_name", "new_content"], "properties": {
            "skill_name": {"type": "string"}, "new_content": {"type": "string"},
            "new_name": {"type": "string"}}}}},
    {"type": "function", "function": {
        "name": "skill_delete",
        "description": "Delete a skill that is wrong or redundant.",
        "parameters": {"type": "object", "required": ["skill_name"], "properties": {
            "skill_name": {"type": "string"}}}}},
]
TOOL_OPS = {"new_skill_insert": "insert", "skill_update": "update", "skill_delete": "delete"}

# The schema TRL publishes for CuratorEnv.curate_and_advance (built from its docstring by
# transformers' get_json_schema, "return" included: the chat template renders all of it, so
# eval prompts match training prompts); a test holds the two equal.
CURATE_AND_ADVANCE = {"type": "function", "function": {
    "name": "curate_and_advance",
    "description": "Edit the skill repo, then let the executor play the next task with the updated repo.",
    "parameters": {"type": "object", "required": ["operations"], "properties": {"operations": {
        "type": "array", "items": {"type": "object"},
        "description": 'Skill edits to apply in order; an empty list advances without editing. Each is '
                       '{"op": "insert" | "update" | "delete", "skill_name": str, "content": str (insert), '
                       '"new_name": str (update, optional), "new_content": str (update)}. Content is SKILL.md '
                       'text (frontmatter with a description) or plain markdown whose first line is the '
                       'description.'}}},
    "return": {"type": "string", "description": "The result of each operation, then the next task, the skills "
               "the executor\n    retrieved, its trajectory and whether it succeeded."}}}
TOOL_SURFACES = {"paper": TOOLS, "curate_and_advance": [CURATE_AND_ADVANCE]}
# skillos train writes this file into every checkpoint: {"tools": <surface it trained on>}.
SURFACE_FILE = "skillos-curator.json"

# The curator's instructions, the same in training (the dataset prompt) and in evaluation.
CURATOR_SYSTEM = ("You maintain a repository of skills (short markdown guides) that a household agent "
                  "retrieves before each task. After each game, add, rewrite or delete skills so the "
                  "agent does better on the next tasks.")
CURATOR_INSTRUCTIONS = {
    "paper": "Call the tools; call none if nothing should change.",
    "curate_and_advance": "After each task call curate_and_advance with your edits (an empty list "
                          "to change nothing); it plays the next task and shows you the result.",
}


@dataclass(frozen=True)
class Applied:
    ok: bool
    line: str  # one line for the curator's next input
    content: str | None = None  # inserted or updated text, for the judge


MAX_OPS_PER_CALL = 32  # a curator call editing more than this is refused past it, and counted


def ops_from_tool_calls(calls: list[dict]) -> list:
    """Tool calls of either form -> operations. Whatever a model sends (arguments that are a
    list or a string, `operations` that is not a list, an unknown tool, more than
    MAX_OPS_PER_CALL edits) becomes invalid operations that apply_op refuses and the runner
    counts, never an exception and never silently nothing."""
    ops = []
    for call in calls if isinstance(calls, list) else [calls]:
        if not isinstance(call, dict):
            ops.append({"op": f"unparseable tool call {str(call)[:60]!r}"})
            continue
        name, args = call.get("name"), call.get("arguments")
        args = {} if args is None else args
        if not isinstance(args, dict):
            ops.append({"op": f"unparseable arguments for {str(name)[:40]!r}: {str(args)[:60]!r}"})
        elif name == "curate_and_advance":
            listed = args.get("operations", [])
            if listed is None:
                listed = []
            if not isinstance(listed, list):
                ops.append({"op": f"operations must be a list, got {type(listed).__name__}"})
            elif "_unparsed" in args:
                ops.append({"op": "unparseable arguments"})
            else:
                ops.extend(listed)
        elif name in TOOL_OPS:
            ops.append({**args, "op": TOOL_OPS[name]} if "_unparsed" not in args
                       else {"op": "unparseable arguments"})
        else:
            ops.append({"op": f"unknown tool {str(name)[:40]!r}"})
    if len(ops) > MAX_OPS_PER_CALL:
        ops = ops[:MAX_OPS_PER_CALL] + [{"op": f"{len(ops) - MAX_OPS_PER_CALL} operations past the "
                                         f"limit of {MAX_OPS_PER_CALL} per call"}]
    return ops


@dataclass(frozen=True)
class Capacity:
    """The most procedures a skill repo may tell the executor (`most`), counted by its
    environment's reader (`instructs`: skill -> the procedures it says how to do, household:
    heat / cool / clean / look); `key` is the setting that set it, named in a refusal."""

    most: int
    instructs: Callable
    key: str

    def over(self, repo: SkillRepo) -> list | None:
        """The procedures `repo` tells, sorted, when they are more than `most`; else None."""
        told = sorted(set().union(*[self.instructs(s) for s in repo.skills]))
        return told if len(told) > self.most else None


def apply_op(repo: SkillRepo, op, capacity: Capacity | None = None) -> Applied:
    """Apply one operation to `repo`; with `capacity`, a write that would leave the repo telling
    more procedures than it holds is refused and changes nothing."""
    if capacity is None:
        return _apply(repo, op)
    trial = repo.copy()
    applied = _apply(trial, op)
    told = capacity.over(trial) if applied.ok else None
    if told is not None and len(told) > len(capacity.over(repo) or ()):  # a repo loaded past it may shrink
        kind, name = op["op"], str(op["skill_name"])
        return Applied(False, f"- {kind} {name}: refused: the skills would tell how to {', '.join(told)}; the repo "
                              f"holds at most {capacity.most} ({capacity.key})")
    return _apply(repo, op) if applied.ok else applied


def _apply(repo: SkillRepo, op) -> Applied:
    if not isinstance(op, dict) or op.get("op") not in OPS or not op.get("skill_name") \
            or not isinstance(op.get("skill_name"), str):
        return Applied(False, f"- invalid operation {str(op)[:80]!r}: needs op (insert|update|delete) "
                              "and skill_name")
    kind, name = op["op"], str(op["skill_name"])
    content = None
    if kind == "delete":
        result = repo.delete(name)
    elif kind == "insert":
        content = op.get("content")
        if not content:
            return Applied(False, f"- insert {name}: refused: no content")
        result = repo.insert(name, *split_content(str(content)))
    else:
        content, new_name = op.get("new_content"), op.get("new_name")
        old = repo.get(name)
        if content is None and not new_name:
            return Applied(False, f"- update {name}: refused: nothing to change (new_content or new_name)")
        if old is None:
            return Applied(False, f"- update {name}: refused: no skill named {name!r}; use insert")
        description, body = split_content(str(content)) if content is not None else (old.description, old.body)
        if new_name and new_name != name:
            result = repo.insert(str(new_name), description, body)
            if result.ok:
                repo.delete(name)
        else:
            result = repo.update(name, description, body)
    if not result.ok:
        return Applied(False, f"- {kind} {name}: refused: {result.reason}")
    return Applied(True, f"- {kind} {name}: ok", None if content is None else str(content))


def split_content(content: str) -> tuple[str, str]:
    """SKILL.md text, or plain markdown whose first non-empty line is the description."""
    if content.lstrip().startswith("---"):
        try:
            skill = parse_skill(content)
            return skill.description, skill.body
        except SkillError:
            pass  # malformed frontmatter: read it as plain text
    lines = content.strip().splitlines()
    first = lines[0].lstrip("# ").strip() if lines else ""
    return first, "\n".join(lines[1:]).strip()


def steps_shown(history_length: int | None) -> int:
    """How many trajectory steps the curator reads (curator.history_length; None: 30)."""
    return TRAJECTORY_STEPS_SHOWN if history_length is None else history_length


def curator_input(traj, position: int | None = None, total: int | None = None,
                  history_length: int | None = None) -> str:
    """What the curator reads after a game: the task, the skills used, the last
    `history_length` steps of the trajectory (curator.history_length; None: 30), the result."""
    if traj.won is None:
        result = f"UNMEASURED ({traj.unmeasured_reason})"
    else:
        result = "SUCCESS" if traj.won else "FAILURE"
    shown = steps_shown(history_length)
    steps = traj.steps[-shown:] if shown else []  # slicing from -0 would show every step
    where = f"Task {position} of {total}: " if position else "Task: "
    lines = [f"{where}{traj.task}",
             f"Skills retrieved: {', '.join(traj.retrieved) or '(none)'}",
             f"Trajectory ({len(traj.steps)} steps, last {len(steps)} shown):" if shown
             else f"Trajectory: {len(traj.steps)} steps (none shown)"]
    lines += [f"> {s.action}\n{s.observation.strip()[:300]}" for s in steps]
    lines.append(f"Result: {result}")
    return "\n".join(lines)


def check_surface(model: str | None, tools: str) -> None:
    """Refuse to evaluate a skillos-trained checkpoint on a tool surface it was not trained on."""
    from pathlib import Path

    marker = Path(model or "").expanduser() / SURFACE_FILE
    if not model or not marker.is_file():
        return
    trained = read_json_file(marker, "curator checkpoint marker", 1 << 16).get("tools")
    if trained and trained != tools:
        raise SkillosError(f"curator {model}: trained on the {trained} tool surface, configured with "
                           f"curator.tools: {tools}; set curator.tools: {trained}")
