"""The two kinds of skill the heuristic curator writes, in ordinary prose any reader can follow:

* `where-to-find-<object>`: where the object was found in past rooms, most likely first, with
  how often it was found when a receptacle of each type was searched ("found 3 of 5 times").
* a procedure named after a task kind (`put-a-clean-x-in-y`): numbered sentences that won tasks
  of that kind, the record of wins and failures when they were followed, and pitfalls seen.

The executor reads them with the same grammar it reads anyone's prose with (reading.py); the
curator parses back only its own bookkeeping (counts, records, steps) to update them. The
markdown is the only memory, nothing hidden.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PLACE = re.compile(r"^- ([a-z]+): (?:found|not found) there (\d+) of (\d+) times")
_RECORD = re.compile(r"won (\d+), failed (\d+)")
_KIND = re.compile(r'^For tasks like "(.+)"')


def article(noun: str) -> str:
    return "an" if noun[:1] in "aeiouAEIOUX" else "a"


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
        lines = [f"# Where to find {a} {self.obj}", "",
                 f"Look for {a} {self.obj} in these places, the most likely first. Each line says how "
                 f"often {a} {self.obj} was found there when one was searched in past rooms.", ""]
        lines += [f"- {r}: {'found' if f else 'not found'} there {f} of {s} times" for r, (f, s) in ranked]
        return description, "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, obj: str, body: str) -> "Locations":
        counts = {}
        for line in body.splitlines():
            m = _PLACE.match(line.strip())
            if m:
                counts[m.group(1)] = [int(m.group(2)), int(m.group(3))]
        return cls(obj, counts)


# The curator's steps (X: the task's object, Y: its target) and the sentence each is written as.
SAY = (
    ("find a X and take it", "Find an X and pick it up."),
    ("find another X and take it", "Find another X and pick it up."),
    ("go to Y", "Go to Y."),
    ("go to {place}", "Go to the {place}."),
    ("{verb} the X with {place}", "{Verb} the X with the {place}."),
    ("move the X to Y", "Put the X in or on Y."),
    ("find the Y and use it", "With the X in hand, find the Y and turn on the Y."),
)


def _shape(template: str):
    pattern = re.escape(template)
    for field_, group in (("place", "[a-z]+"), ("verb", "[a-z]+"), ("Verb", "[A-Z][a-z]+")):
        pattern = pattern.replace(re.escape("{" + field_ + "}"), f"(?P<{field_.lower()}>{group})")
    return re.compile(pattern)


def say(step: str) -> str:
    """A curator step as the sentence the skill shows."""
    for template, sentence in SAY:
        m = _shape(template).fullmatch(step)
        if m:
            verb = m.groupdict().get("verb", "")
            return sentence.format(place=m.groupdict().get("place"), verb=verb, Verb=verb.capitalize())
    raise ValueError(f"not a curator step: {step!r}")


def unsay(sentence: str) -> str | None:
    """The curator step one of its own sentences says (None: not one of its sentences)."""
    for template, shown in SAY:
        m = _shape(shown).fullmatch(sentence)
        if m:
            return template.format(**{k: v.lower() for k, v in m.groupdict().items()})
    return None


@dataclass
class Procedure:
    kind: str
    steps: list
    won: int = 0
    failed: int = 0
    pitfalls: list = field(default_factory=list)  # sentences

    def render(self) -> tuple[str, str]:
        description = (f"Steps that won tasks like {self.kind} (X is the object and Y the place the task "
                       f"names); won {self.won}, failed {self.failed} when followed.")
        lines = [f"# {self.kind[:1].upper()}{self.kind[1:]}", "",
                 f'For tasks like "{self.kind}": X is the object the task names and Y the place it names. '
                 "These steps won:", ""]
        lines += [f"{i}. {say(step)}" for i, step in enumerate(self.steps, 1)]
        lines += ["", f"When followed: won {self.won}, failed {self.failed}."]
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
            elif (m := re.match(r"^\d+\.\s+(.+)$", line)) and (step := unsay(m.group(1))):
                steps.append(step)
            elif (m := _RECORD.search(line)):
                won, failed = int(m.group(1)), int(m.group(2))
            elif line == "Pitfalls seen:":
                in_pitfalls = True
            elif in_pitfalls and line.startswith("- "):
                pitfalls.append(line[2:])
        return cls(kind, steps, won, failed, pitfalls) if kind and steps else None


def pitfall(step: str) -> str:
    """The pitfall a step done only after a failed delivery teaches, as a sentence."""
    sentence = say(step).rstrip(".")
    return f"Putting the X in Y before you {sentence[0].lower()}{sentence[1:]} did not finish the task."
