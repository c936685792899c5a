"""The textual learning rate as a size, and the block no ordinary step may edit.

SkillOpt bounds a step by how much of the skill text it may change ("one unbounded rewrite can
destroy it"); counting edits does not: one `replace` can rewrite a whole SKILL.md and still be
one edit. So a step of `skillos optimize` has a budget of **changed lines** (`changed_lines`:
difflib over the old and new text, a replaced line counting once), decayed by the schedule. Each
proposed edit is measured on the whole text it leaves (every skill, or the one document, after the
edits admitted before it) and admitted only while it fits what is left of the step's budget; one
that does not fit is refused (not cut: half a rewrite is a different edit nobody proposed), and
so is any edit after which a protected block differs. Every
refusal is kept with its reason for the step record.

The protected block (`<!-- skillos:slow-update -->` ... `<!-- /skillos:slow-update -->`) holds
the cross-epoch guidance the slow update writes at an epoch's end; ordinary steps never edit it.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass, field

UNIT = "changed lines"
BLOCK_START, BLOCK_END = "<!-- skillos:slow-update -->", "<!-- /skillos:slow-update -->"
_BLOCK = re.compile(re.escape(BLOCK_START) + r".*?" + re.escape(BLOCK_END), re.S)


def changed_lines(old: str, new: str) -> int:
    """Lines changed between two texts: per differing region of the diff, the larger of the lines
    removed and the lines added (a rewritten line is 1, an added or deleted line is 1)."""
    a, b = old.splitlines(), new.splitlines()
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in ops if tag != "equal")


def protected_block(text: str) -> str | None:
    """The protected block of a skill text (markers included), or None when it has none."""
    m = _BLOCK.search(text or "")
    return m.group(0) if m else None


def with_block(text: str, block_body: str) -> str:
    """`text` with its protected block holding `block_body` (added after the first heading line,
    or at the top, when it has none yet)."""
    block = f"{BLOCK_START}\n{block_body.strip()}\n{BLOCK_END}"
    if protected_block(text) is not None:
        return _BLOCK.sub(lambda _: block, text, count=1)
    lines = text.splitlines(keepends=True)
    at = next((i + 1 for i, line in enumerate(lines) if line.startswith("#")), 0)
    return "".join(lines[:at]) + ("\n" if at else "") + block + "\n\n" + "".join(lines[at:]).lstrip("\n")


def _blocks(text: str | None) -> tuple:
    """Every protected block of a text and every marker in it: a second block, or half of one,
    added after the first changes this as surely as an edit inside the first."""
    text = text or ""
    return tuple(_BLOCK.findall(text)), text.count(BLOCK_START), text.count(BLOCK_END)


def _texts(repo) -> dict:
    """Every skill's whole text, by name (in name order): what a step's budget and protected
    blocks are judged on."""
    return {skill.name: skill.to_markdown() for skill in sorted(repo.skills, key=lambda skill: skill.name)}


@dataclass
class Refusal:
    edit: str  # the edit's summary
    changed_lines: int
    reason: str


@dataclass
class StepBudget:
    """One step's budget of changed lines: `admit` keeps the edits that fit, in the order given,
    and refuses the rest with a reason."""

    allowed: int
    used: int = 0
    refusals: list = field(default_factory=list)

    @property
    def left(self) -> int:
        return self.allowed - self.used

    def admit(self, edits: list, before) -> list:
        """The edits of `edits` that fit, in order, each applied to a copy of what the edits
        admitted before it made of `before` (the incumbent) and judged on the whole result: its
        changed lines against every skill's text (an `add` that reuses a section's name costs the
        section it adds), and every protected block and marker unchanged (half a block is
        refused, so no two edits can forge one). One that cannot be applied (a skill over the size
        limit) is refused too."""
        kept, trial = [], before.copy()
        for e in edits:
            attempt = trial.copy()
            why = e.apply_in(attempt)
            old, new = _texts(trial), _texts(attempt)
            size = changed_lines("".join(old.values()), "".join(new.values()))
            if why is not None:
                self.refusals.append(Refusal(e.summary(), size, f"cannot be applied: {why}"))
            elif any(_blocks(old.get(name)) != _blocks(new.get(name)) for name in {*old, *new}):
                self.refusals.append(Refusal(e.summary(), size, "touches the protected slow-update block, "
                                                                   "which only the epoch-end slow update writes"))
            elif size > self.left:
                self.refusals.append(Refusal(e.summary(), size, f"{size} changed lines exceed the {self.left} left "
                                                                f"of this step's budget of {self.allowed}"))
            else:
                self.used += size
                kept.append(e)
                trial = attempt
        return kept

    def to_dict(self) -> dict:
        return {"unit": UNIT, "allowed": self.allowed, "used": self.used, "left": self.left,
                "refused": len(self.refusals), "refusals": [asdict(r) for r in self.refusals]}
