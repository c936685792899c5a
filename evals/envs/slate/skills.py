"""The four kinds of skill on a SkillGate slate, and the misleading ones built from the oracle.

* **oracle**: the skill whose `metadata.task_type` is the task's (the right one);
* **relevant**: helpful for the task but not the one it needs (`metadata.relevant_to`: the task
  types it helps, space-separated): how to search a room, open closed receptacles, the pick-and-
  place routine for a task that adds a step to it;
* **misleading**: plausible for the task and wrong in its body. Built here, deterministically,
  by mutating the oracle's body — the wrong order (the delivery before the transformation), the
  wrong receptacle (where to look for the object or the lamp), the wrong tool (a stove to heat
  with, a sink to cool in), or the right tool to be avoided — under a name and description from
  a fixed list per task type that never contains the task type's tell-tale words (`TELLTALE`),
  so the listing does not give it away the way another task type's oracle would;
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

CATEGORIES = ("oracle", "relevant", "misleading", "irrelevant")

# Words that tell a task type apart in its task sentence or a skill's name ("heat some egg and
# put it in diningtable", "look at bowl under the desklamp"): a misleading skill's name and
# description never contain them, in any inflection (`telltale_words`).
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
    the wrong-tool-avoided step says, who the wrong-place sentences are about, and the names and
    descriptions the misleading skills take."""

    tool: str
    wrong_tool: str
    first: str
    then: str
    avoid: str
    subjects: tuple
    names: tuple


_DELIVER = r"\btarget\b|\bput\b"
# Receptacles an object is rarely in (wrong places to look first): a search that starts there
# wastes steps. None of them is a tool of a transformation.
WRONG_PLACES = (("garbagecan", "safe"), ("toilet", "bathtubbasin"), ("dresser", "armchair"),
                ("laundryhamper", "ottoman"))
USUAL_PLACES = ("countertop", "diningtable")  # "never look there": where many objects are

MUTABLE = {
    "pick_heat_then_place_in_recep": Mutable(
        r"\bmicrowave\b", "stoveburner", r"\bmicrowave\b|\bheat", _DELIVER,
        "Heat the object, but not in the microwave.", ("X",), (
            ("prepare-a-dish", "Get a dish ready with a kitchen appliance, then set it where it goes."),
            ("kitchen-appliance-routine", "Run an item through a kitchen appliance before putting it away."),
            ("serve-food", "Make food ready to serve and bring it to its spot."),
            ("ready-then-deliver", "Make an item ready with the right appliance, then deliver it."),
            ("appliance-first", "Use an appliance on the item first, then take it where the task says."),
            ("process-then-store", "Process an item in the kitchen and store it in its place."),
            ("meal-prep-steps", "Steps for preparing food and setting it down."))),
    "pick_cool_then_place_in_recep": Mutable(
        r"\bfridge\b", "sinkbasin", r"\bfridge\b|\bcool", _DELIVER,
        "Cool the object, but not in the fridge.", ("X",), (
            ("keep-food-fresh", "Keep food fresh with a kitchen appliance, then set it where it goes."),
            ("preserve-then-store", "Preserve an item with the right appliance, then store it."),
            ("lower-the-temperature", "Bring an item down in temperature before putting it away."),
            ("kitchen-storage-routine", "Run an item through kitchen storage before delivering it."),
            ("fresh-then-deliver", "Make an item fresh with an appliance, then deliver it."),
            ("appliance-then-shelve", "Treat an item with an appliance, then put it on its shelf or table."),
            ("drink-prep-steps", "Steps for readying a drink or a food item and setting it down."))),
    "pick_clean_then_place_in_recep": Mutable(
        r"\bsinkbasin\b|\bsink basin\b|\bsink\b", "bathtubbasin", r"\bsinkbasin\b|\bclean", _DELIVER,
        "Clean the object, but not in the sinkbasin.", ("X",), (
            ("tidy-an-item", "Make an item spotless, then set it where it goes."),
            ("spotless-then-store", "Get an item spotless with water, then store it."),
            ("hygiene-routine", "A hygiene routine for dishes and tools before putting them away."),
            ("dish-care", "Care for a dish or a utensil, then bring it to its spot."),
            ("remove-dirt-first", "Remove dirt from an item first, then deliver it."),
            ("water-then-deliver", "Treat an item with water, then take it where the task says."),
            ("kitchen-hygiene-steps", "Steps for making kitchen items hygienic and setting them down."))),
    "look_at_obj_in_light": Mutable(
        r"\ba desklamp or floorlamp\b|\bdesklamp or floorlamp\b|\bthe lamp\b|\ba lamp\b|\bdesklamp\b|\bfloorlamp\b",
        "the television", r"\btake\b", r"\buse\b",
        "Do not use a lamp; examine the object where you found it.", ("X", "the lamp"), (
            ("inspect-an-item", "Inspect an item closely at the right spot in the room."),
            ("study-an-object", "Hold an object and study it carefully."),
            ("see-details-clearly", "See an item's details clearly before you finish."),
            ("viewing-routine", "A routine for viewing an item up close."),
            ("check-an-item-over", "Pick an item up and check it over in good conditions."),
            ("observe-closely", "Observe an item closely while holding it."),
            ("inspection-steps", "Steps for inspecting an object you are holding."))),
    "pick_two_obj_and_place": Mutable(
        r"(?!)", "", r"\btake\b", r"\bput\b", "", ("X",), (
            ("gather-a-set", "Gather items of one kind and store them together."),
            ("collect-matching-items", "Collect matching items into one receptacle."),
            ("group-things-together", "Group things of one kind in the same receptacle."),
            ("stock-a-receptacle", "Stock a receptacle with items of the same kind."),
            ("sort-items-into-their-spot", "Sort items of a kind into the receptacle the task names."),
            ("several-items-routine", "A routine for moving several items to one receptacle."),
            ("batch-delivery", "Deliver a batch of items to one receptacle."))),
    "pick_and_place_simple": Mutable(
        r"(?!)", "", r"\btake\b", _DELIVER, "", ("X",), (
            ("tidy-away", "Tidy an item away to where the task says it belongs."),
            ("return-an-item", "Return an item to its receptacle."),
            ("move-one-thing", "Move one thing from where it is to its destination."),
            ("store-an-item", "Store an item in the receptacle the task names."),
            ("relocate-an-object", "Relocate an object to the named receptacle."),
            ("deliver-an-item", "Deliver an item to its destination."),
            ("set-an-item-down", "Carry an item and set it down at its destination."))),
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
    from skillos.repo.skill import Skill

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
    return [Skill(name, description, body, {"metadata": {"misleading_for": task_type, "derived_from": oracle.name,
                                                         "mutation": "+".join(edits)}})
            for (name, description), (edits, body) in zip(spec.names, bodies[:n])]


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
