"""The four kinds of skill on a SkillGate slate, and the misleading ones built from the oracle.

* **oracle**: the skill whose `metadata.task_type` is the task's (the right one);
* **relevant**: helpful for the task but not the one it needs (`metadata.relevant_to`: the task
  types it helps, space-separated): how to search a room, open closed receptacles, the pick-and-
  place routine for a task that adds a step to it;
* **misleading**: plausible for the task and wrong in its body. Built here, deterministically,
  by mutating the oracle's body — the wrong order (the delivery before the transformation), the
  wrong receptacle (where to look for the object or the lamp), the wrong tool (a stove to heat
  with, a sink to cool in), or the right tool to be avoided — under a name in the oracle's
  pattern (`heat-then-set` beside `heat-then-place`) and the oracle's own description, word for
  word: on a slate the oracle and these skills are one line listed six times under names they
  trade per slate (slates.py), so no rule over the listing — lexical, scene-text, name or the
  listing's structure — can tell them apart beyond chance; only reading a body can
  (evals/envs/slate/audit.py measures it);
* **irrelevant**: about something else (no `task_type`, no `relevant_to`).

Every mutation is a text edit of the oracle's numbered steps, so a slate folder whose oracles
are written differently gets the mutations that apply to them and a one-line error if too few
do. What a mutation does to a reader is checked in tests with the CPU executor's reader
(`evals/envs/household/heuristic/reading.guidance`): each misleading body changes the tool, the order
or the places the oracle's body gives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from skillos.errors import SkillosError
from skillos.repo.skill import Skill

CATEGORIES = ("oracle", "relevant", "misleading", "irrelevant")

# Words that tell a task type apart in its task sentence or a skill's name ("heat some egg and
# put it in diningtable", "look at bowl under the desklamp"): a misleading skill's name and
# description contain them, as its oracle's do, in some inflection (`telltale_words`).
TELLTALE = {
    "pick_heat_then_place_in_recep": ("heat", "hot", "warm", "microwave", "cook"),
    "pick_cool_then_place_in_recep": ("cool", "cold", "chill", "fridge", "refrigerator", "refrigerate",
                                      "freeze", "freezer", "frozen", "ice"),
    "pick_clean_then_place_in_recep": ("clean", "wash", "rinse", "sink", "sinkbasin", "scrub"),
    "look_at_obj_in_light": ("look", "examine", "light", "lamp", "desklamp", "floorlamp", "lit"),
    "pick_two_obj_and_place": ("two", "both", "pair", "second", "twice", "2"),
    "pick_and_place_simple": ("pick", "place", "put", "simple"),
}


def telltale_words(text: str, task_type: str) -> list[str]:
    """The tell-tale words of `task_type` that `text` contains (any inflection: heats, heated,
    heating, lamps), in the order of TELLTALE."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    found = []
    for tell in TELLTALE[task_type]:
        if any(re.fullmatch(rf"{tell}(s|es|ed|d|ing|er|ers|y)?", w) for w in words):
            found.append(tell)
    return found


@dataclass(frozen=True)
class Mutable:
    """How a task type's oracle body is mutated: the words naming its tool (a regex), the
    plausible wrong tool, the step that must come first and the one after it (regexes), what
    the wrong-tool-avoided step says, who the wrong-place sentences are about, and the names the
    misleading skills take (in the oracle's own pattern; their description is the oracle's)."""

    tool: str
    wrong_tool: str
    first: str
    then: str
    avoid: str
    subjects: tuple
    names: tuple
    # The transformation's verb: a wrong-order body says its order in words ("... put the object
    # there before you heat the object"), as a reader who trusts a stated order over the listing's
    # would follow it (the listing is the oracle's and states the right order).
    verb: str = ""


_DELIVER = r"\btarget\b|\bput\b"


def _names(pattern: str) -> tuple:
    """Seven names in one pattern ("heat-then-{}"), the oracle's: they differ in a last word no
    task sentence uses, so a name tells a matcher nothing the oracle's does not."""
    return tuple(pattern.format(w) for w in ("set", "store", "leave", "stow", "deliver", "return", "drop"))


# Receptacles an object is rarely in (wrong places to look first): a search that starts there
# wastes steps. None of them is a tool of a transformation.
WRONG_PLACES = (("garbagecan", "safe"), ("toilet", "bathtubbasin"), ("dresser", "armchair"),
                ("laundryhamper", "ottoman"))
USUAL_PLACES = ("countertop", "diningtable")  # "never look there": where many objects are

MUTABLE = {
    "pick_heat_then_place_in_recep": Mutable(
        r"\bmicrowave\b", "stoveburner", r"\bmicrowave\b|\bheat", _DELIVER,
        "Heat the object, but not in the microwave.", ("X",), _names("heat-then-{}"), "heat"),
    "pick_cool_then_place_in_recep": Mutable(
        r"\bfridge\b", "sinkbasin", r"\bfridge\b|\bcool", _DELIVER,
        "Cool the object, but not in the fridge.", ("X",), _names("cool-then-{}"), "cool"),
    "pick_clean_then_place_in_recep": Mutable(
        r"\bsinkbasin\b|\bsink basin\b|\bsink\b", "bathtubbasin", r"\bsinkbasin\b|\bclean", _DELIVER,
        "Clean the object, but not in the sinkbasin.", ("X",), _names("clean-then-{}"), "clean"),
    "look_at_obj_in_light": Mutable(
        r"\ba desklamp or floorlamp\b|\bdesklamp or floorlamp\b|\bthe lamp\b|\ba lamp\b|\bdesklamp\b|\bfloorlamp\b",
        "the television", r"\btake\b", r"\buse\b",
        "Do not use a lamp; examine the object where you found it.", ("X", "the lamp"),
        tuple(f"examine-{w}-light" for w in ("by", "near", "beside", "against", "toward", "facing", "nearby"))),
    "pick_two_obj_and_place": Mutable(
        r"(?!)", "", r"\btake\b", r"\bput\b", "", ("X",), _names("two-objects-{}")),
    "pick_and_place_simple": Mutable(
        r"(?!)", "", r"\btake\b", _DELIVER, "", ("X",), _names("pick-and-{}")),
}

# The mutations tried for a task type, in order (the first n_misleading that apply are used):
# each is a tuple of edits applied in turn.
_TRANSFORM_PLAN = (("wrong-tool",), ("wrong-order",), ("avoid-tool",), ("wrong-place:X:0",),
                   ("wrong-order", "wrong-tool"), ("wrong-tool", "wrong-place:X:1"), ("never-there:X",))
PLANS = {
    "pick_heat_then_place_in_recep": _TRANSFORM_PLAN,
    "pick_cool_then_place_in_recep": _TRANSFORM_PLAN,
    "pick_clean_then_place_in_recep": _TRANSFORM_PLAN,
    "look_at_obj_in_light": (("wrong-tool",), ("avoid-tool",), ("wrong-place:X:0",), ("wrong-place:the lamp:1",),
                             ("wrong-order", "wrong-place:X:2"), ("never-there:X",),
                             ("wrong-tool", "wrong-place:the lamp:3")),
    "pick_two_obj_and_place": (("wrong-place:X:0",), ("wrong-place:X:1",), ("never-there:X",),
                               ("wrong-order", "wrong-place:X:2"), ("wrong-place:X:3",),
                               ("wrong-order", "never-there:X"), ("wrong-order", "wrong-place:X:3")),
    "pick_and_place_simple": (("wrong-place:X:0",), ("wrong-place:X:1",), ("never-there:X",),
                              ("wrong-order", "wrong-place:X:2"), ("wrong-place:X:3",),
                              ("wrong-order", "never-there:X"), ("wrong-order", "wrong-place:X:3")),
}

_STEP = re.compile(r"^\s*(\d+)[.)]\s*(.*\S)\s*$")


def steps_of(body: str) -> list[str] | None:
    """The numbered steps of a body (their text), or None when it has no numbered list."""
    steps = [m.group(2) for line in body.splitlines() if (m := _STEP.match(line))]
    return steps or None


def _render(steps: list[str]) -> str:
    return "\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1))


def _index(steps: list[str], pattern: str, last: bool = False) -> int | None:
    found = [i for i, s in enumerate(steps) if re.search(pattern, s, re.I)]
    return (found[-1] if last else found[0]) if found else None


def _edit(steps: list[str], edit: str, spec: Mutable) -> list[str] | None:
    """One edit of the steps, or None when it does not apply to them."""
    kind, _, arg = edit.partition(":")
    if kind == "wrong-tool":
        changed = [re.sub(spec.tool, spec.wrong_tool, s, flags=re.I) for s in steps]
        return changed if changed != steps else None
    if kind == "wrong-order":  # the step that must come first moves after the one that follows it
        first, then = _index(steps, spec.first), _index(steps, spec.then, last=True)
        if first is None or then is None or first >= then:
            return None
        out = list(steps)
        out[first], out[then] = out[then], out[first]
        if spec.verb:
            out[first] = f"{out[first].rstrip('.')} before you {spec.verb} the object."
        return out
    if kind == "avoid-tool":
        at = _index(steps, spec.tool)
        if at is None or not spec.avoid:
            return None  # the tool's first step says to avoid it; its other steps go
        return [spec.avoid if i == at else s for i, s in enumerate(steps)
                if i == at or not re.search(spec.tool, s, re.I)]
    if kind == "wrong-place":
        subject, _, pair = arg.partition(":")
        a, b = WRONG_PLACES[int(pair) % len(WRONG_PLACES)]
        return [f"Look for {subject} in the {a} and the {b} first; it is usually kept there."] + steps
    if kind == "never-there":
        a, b = USUAL_PLACES
        return [f"Never look for {arg} on the {a} or the {b}; it is rarely there."] + steps
    raise ValueError(f"unknown mutation {edit!r}")


def mutate(body: str, edits: tuple, spec: Mutable) -> str | None:
    """The oracle body with `edits` applied, or None when one does not apply."""
    steps = steps_of(body)
    for edit in edits:
        if steps is None:
            return None
        steps = _edit(steps, edit, spec)
    return None if steps is None else _render(steps)


def misleading_skills(oracle, task_type: str, n: int) -> list:
    """`n` misleading skills for `task_type`, built from its oracle skill (deterministic: the
    same oracle gives the same skills). Each is a Skill whose metadata records what it is:
    `misleading_for` (the task type), `derived_from` (the oracle) and `mutation` (the edits).
    A one-line SkillosError when fewer than `n` mutations apply to the oracle's body."""
    if n <= 0:
        return []
    if task_type not in MUTABLE:
        raise SkillosError(f"slate: no misleading mutations are defined for task type {task_type!r}")
    spec, bodies = MUTABLE[task_type], []
    for edits in PLANS[task_type]:
        body = mutate(oracle.body, edits, spec)
        if body is not None and body != oracle.body.strip() and body not in (b for _, b in bodies):
            bodies.append((edits, body))
    usable = min(len(bodies), len(spec.names))
    if usable < n:
        raise SkillosError(f"slate: skillgate.n_misleading {n} but only {usable} misleading variants of "
                           f"{oracle.name!r} ({task_type}) can be built; lower n_misleading or write its body "
                           "as numbered steps naming its tool")
    return [Skill(name, oracle.description, body,
                  {"metadata": {"misleading_for": task_type, "derived_from": oracle.name, "mutation": "+".join(edits)}})
            for name, (edits, body) in zip(spec.names, bodies[:n])]


def relevant_to(skill) -> set[str]:
    """The task types a skill is relevant to (`metadata.relevant_to`, space- or comma-separated)."""
    meta = skill.extra.get("metadata") or {}
    value = meta.get("relevant_to") if isinstance(meta, dict) else None
    if isinstance(value, (list, tuple)):
        return {str(v) for v in value}
    return set(re.split(r"[\s,]+", value.strip())) - {""} if isinstance(value, str) else set()


def misleading_for(skill) -> str | None:
    meta = skill.extra.get("metadata") or {}
    return meta.get("misleading_for") if isinstance(meta, dict) else None


def derived_from(skill) -> str | None:
    """The oracle a built misleading skill was made from (None: not built from one)."""
    meta = skill.extra.get("metadata") or {}
    return meta.get("derived_from") if isinstance(meta, dict) else None
