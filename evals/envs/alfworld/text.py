"""Reading ALFWorld's text: the task sentence, the room list, what a receptacle holds.

This is what any player can read off the screen; it encodes no knowledge of where objects are
or which steps a task needs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_ITEM = re.compile(r"\ban? ([a-z]+ \d+)")
_ARRIVE = re.compile(r"^You arrive at ([a-z]+ \d+)\.")
_OPEN = re.compile(r"^You open the ([a-z]+ \d+)\.")
_CLOSED = re.compile(r"The ([a-z]+ \d+) is closed\.")
_CONTENTS = re.compile(r"(?:On the|In it,|In the) ?([a-z]+ \d+)?,? you see (.*?)\.(?:\s|$)")


def kind_of(name: str) -> str:
    """'countertop 2' -> 'countertop'."""
    return name.rsplit(" ", 1)[0]


def room_receptacles(intro: str) -> list[str]:
    """Receptacles in the order the room description lists them."""
    seen = intro.split("you see", 1)[-1].split("Your task is to:")[0]
    return _ITEM.findall(seen)


def seen_items(feedback: str) -> list[str]:
    """Objects a feedback line shows inside or on a receptacle ('apple 1', ...)."""
    if "you see" not in feedback:
        return []
    listed = feedback.split("you see", 1)[1]
    return _ITEM.findall(listed)


def arrived_at(feedback: str) -> str | None:
    for pattern in (_ARRIVE, _OPEN):
        m = pattern.match(feedback)
        if m:
            return m.group(1)
    return None


def is_closed(feedback: str) -> bool:
    return bool(_CLOSED.search(feedback))


@dataclass(frozen=True)
class Goal:
    """A task sentence read into its nouns. `kind` is the sentence with the object as X and the
    target (a receptacle or a lamp) as Y: tasks of one kind are solved the same way."""

    obj: str
    target: str
    count: int
    kind: str


_GOAL_SHAPES = (
    re.compile(r"^look at (?P<obj>[a-z]+) under the (?P<target>[a-z]+)$"),
    re.compile(r"^examine the (?P<obj>[a-z]+) with the (?P<target>[a-z]+)$"),
    re.compile(r"^put (?:a|some|two) (?:[a-z]+ )??(?P<obj>[a-z]+) (?:in|on) (?P<target>[a-z]+)$"),
    re.compile(r"^[a-z]+ (?:some|two) (?P<obj>[a-z]+) and put (?:it|them) in (?P<target>[a-z]+)$"),
)


def parse_goal(task: str) -> Goal | None:
    text = " ".join(task.lower().strip().rstrip(".").split())
    for shape in _GOAL_SHAPES:
        m = shape.match(text)
        if m:
            obj, target = m.group("obj"), m.group("target")
            words = text.split()
            kind = " ".join("X" if w == obj else "Y" if w == target else w for w in words)
            return Goal(obj, target, 2 if "two" in words else 1, kind)
    return None
