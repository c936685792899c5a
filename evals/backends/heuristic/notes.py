"""The two kinds of skill the heuristic curator writes, as readable markdown:

* `where-to-find-<object>`: a table of receptacle types, how often the object was found in one
  and how often one was searched. An executor searches the best-scoring types first.
* a procedure named after a task kind (`put-a-clean-x-in-y`): numbered steps that won tasks of
  that kind, with the record of wins and failures when they were followed, and pitfalls seen.

Both are plain SKILL.md files: a person or an LLM executor can read them; the heuristic
executor parses the same text back (the markdown is the only memory, nothing hidden).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_ROW = re.compile(r"^\|\s*([a-z]+)\s*\|\s*(\d+)\s*\|\s*(\d+)\s*\|$")
_STEP = re.compile(r"^\d+\.\s+(.+)$")
_RECORD = re.compile(r"won (\d+), failed (\d+)")
_KIND = re.compile(r"^# Tasks like: (.+)$")


def article(noun: str) -> str:
    return "an" if noun[:1] in "aeiou" else "a"


def location_skill_name(obj: str) -> str:
    return f"where-to-find-{obj}"


def procedure_skill_name(kind: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", kind.lower()).strip("-")[:64].strip("-")


@dataclass
class Locations:
    obj: str
    counts: dict = field(default_factory=dict)  # receptacle type -> [found, searched]

    def score(self, rtype: str) -> float:
        """Laplace-smoothed rate of finding the object when a receptacle of the type is searched."""
        found, searched = self.counts.get(rtype, (0, 0))
        return (found + 1) / (searched + 2)

    def render(self) -> tuple[str, str]:
        ranked = sorted(self.counts.items(), key=lambda kv: (-self.score(kv[0]), kv[0]))
        best = [r for r, (f, _) in ranked if f > 0][:3]
        a = article(self.obj)
        description = (
            f"Where {a} {self.obj} was found in past rooms, most likely first"
            + (f" ({', '.join(best)})" if best else "")
            + f". Use when a task needs {a} {self.obj}."
        )
        lines = [
            f"# Where to find {a} {self.obj}",
            "",
            f"Search receptacles of these types first, top to bottom. `found`: times {a} {self.obj}",
            "was seen in or on one; `searched`: times one was looked into.",
            "",
            "| place | found | searched |",
            "|---|---|---|",
        ]
        lines += [f"| {r} | {f} | {s} |" for r, (f, s) in ranked]
        return description, "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, obj: str, body: str) -> "Locations":
        counts = {}
        for line in body.splitlines():
            m = _ROW.match(line.strip())
            if m:
                counts[m.group(1)] = [int(m.group(2)), int(m.group(3))]
        return cls(obj, counts)


@dataclass
class Procedure:
    kind: str
    steps: list
    won: int = 0
    failed: int = 0
    pitfalls: list = field(default_factory=list)

    def render(self) -> tuple[str, str]:
        description = (
            f"Steps that won tasks like {self.kind} (X is the object and Y the target named in "
            f"the task); won {self.won}, failed {self.failed} when followed."
        )
        lines = [f"# Tasks like: {self.kind}", "",
                 "X is the object and Y the target named in the task. Steps that won:", ""]
        lines += [f"{i}. {step}" for i, step in enumerate(self.steps, 1)]
        lines += ["", f"Record when followed: won {self.won}, failed {self.failed}."]
        if self.pitfalls:
            lines += ["", "Pitfalls seen:", ""] + [f"- {p}" for p in self.pitfalls]
        return description, "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, body: str) -> "Procedure | None":
        kind, steps, won, failed, pitfalls = None, [], 0, 0, []
        in_pitfalls = False
        for line in body.splitlines():
            line = line.strip()
            if (m := _KIND.match(line)):
                kind = m.group(1)
            elif (m := _STEP.match(line)):
                steps.append(m.group(1))
            elif (m := _RECORD.search(line)):
                won, failed = int(m.group(1)), int(m.group(2))
            elif line == "Pitfalls seen:":
                in_pitfalls = True
            elif in_pitfalls and line.startswith("- "):
                pitfalls.append(line[2:])
        return cls(kind, steps, won, failed, pitfalls) if kind and steps else None


# The step language the executor follows (X, Y stand for the task's object and target).
STEP_PATTERNS = (
    ("take", re.compile(r"^find (?:a|another) X and take it$")),
    ("goto", re.compile(r"^go to (?P<place>[a-zA-Z]+)$")),
    ("apply", re.compile(r"^(?P<verb>[a-z]+) the X with (?P<place>[a-zA-Z]+)$")),
    ("move", re.compile(r"^move the X to Y$")),
    ("use", re.compile(r"^find the Y and use it$")),
)


def parse_step(step: str) -> tuple[str, dict] | None:
    for op, pattern in STEP_PATTERNS:
        m = pattern.match(step)
        if m:
            return op, m.groupdict()
    return None
