"""Single-document mode (`optimize.target: document`, SkillOpt's own setting): the trainable
state is ONE SKILL.md, and its sections (markdown headings) are the edit units.

The document is kept as a one-skill repo, so playing it, saving it for `--resume` and the gate
are repo mode's. Proposers read its sections as if each were a skill (`units`: the section's
heading slug is the unit's name), so the heuristic curator and a model's insert / update /
delete tools work unchanged; what they change becomes `SectionEdit`s on the document: add a
section, replace one, delete one. The text before the first section (title, the protected
slow-update block) is no unit: no ordinary edit reaches it.

The run folder gets `best_skill.md` (the best validated version, rewritten at each acceptance)
and `best_skill_history.jsonl` (each accepted version: candidate, step, validation score, diff,
and its file under `versions/`).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from skillos.errors import SkillosError
from skillos.repo import SkillRepo
from skillos.config.derived import relative_to_config
from skillos.files import write_atomic
from skillos.repo import parse_skill
from skillos.repo.skill import Skill, SkillError

BEST, HISTORY, VERSIONS = "best_skill.md", "best_skill_history.jsonl", "versions"
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of each markdown heading outside code fences."""
    found, fence = [], False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        elif not fence and (m := _HEADING.match(line.rstrip("\n"))):
            found.append((i, len(m.group(1)), m.group(2)))
    return found


def section_level(body: str) -> int:
    """The heading level that splits the document into sections: the shallowest one, not counting
    a lone leading level-1 title; 2 for a document that has no sections yet."""
    heads = _headings(body.splitlines(keepends=True))
    if heads and heads[0][1] == 1 and sum(h[1] == 1 for h in heads) == 1:
        heads = heads[1:]
    return min((h[1] for h in heads), default=2)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:64].strip("-") or "section"


@dataclass(frozen=True)
class Section:
    name: str  # the heading's slug: the unit's name
    heading: str
    text: str  # the heading line and everything up to the next section


def split(body: str) -> tuple[str, list[Section]]:
    """(the text before the first section, the sections in order); joined, they are `body`."""
    lines = body.splitlines(keepends=True)
    heads = _headings(lines)
    title = heads[0][0] if heads and heads[0][1] == 1 and sum(h[1] == 1 for h in heads) == 1 else None
    level = section_level(body)
    starts = [(i, text) for i, lvl, text in heads if lvl == level and i != title]
    preamble = "".join(lines[:starts[0][0]]) if starts else body
    sections, seen = [], set()
    for k, (i, text) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
        name, n = slug(text), 2
        while name in seen:  # two sections of the same heading stay two units
            name, n = f"{slug(text)[:60]}-{n}", n + 1
        seen.add(name)
        sections.append(Section(name, text, "".join(lines[i:end])))
    return preamble, sections


def _shift(text: str, by: int) -> str:
    """Every heading of `text` `by` levels deeper (negative: shallower), kept within 1..6."""
    out, fence = [], False
    for line in text.splitlines(keepends=True):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        m = None if fence else _HEADING.match(line.rstrip("\n"))
        if m:
            line = "#" * min(6, max(1, len(m.group(1)) + by)) + line[len(m.group(1)):]
        out.append(line)
    return "".join(out)


def units(document: SkillRepo) -> SkillRepo:
    """The document's sections as a repo of skills (name: the heading's slug; description: the
    section's first paragraph, or its heading), for a proposer to read and edit."""
    doc = only(document)
    level = section_level(doc.body)
    repo = SkillRepo(None)
    for s in split(doc.body)[1]:
        description, body = _parts(s.text.split("\n", 1)[1] if "\n" in s.text else "")
        repo.insert(s.name, (description or s.heading or s.name)[:1024], _shift(body, -level))
    return repo


def _parts(content: str) -> tuple[str, str]:
    """(the first paragraph as one line, the rest) of a section's content."""
    paragraphs = content.strip("\n").split("\n\n", 1)
    first = paragraphs[0].strip()
    if not first or first.startswith(("#", "-", "*", "|", "```", "<!--")) or re.match(r"\d+\.", first):
        return "", content.strip("\n")
    return " ".join(first.split()), paragraphs[1].strip("\n") if len(paragraphs) > 1 else ""


def render_section(heading: str, description: str, body: str, level: int) -> str:
    parts = ["#" * level + " " + heading, description.strip(), _shift(body.strip("\n"), level)]
    return "\n\n".join(p for p in parts if p) + "\n\n"


def only(document: SkillRepo):
    skills = document.skills
    if len(skills) != 1:
        raise SkillosError(f"internal: document mode holds one skill, not {len(skills)}")
    return skills[0]


@dataclass(frozen=True)
class SectionEdit:
    """One bounded change to the document: add, delete or replace one section."""

    op: str  # add | delete | replace
    name: str  # the section's unit name
    text: str | None = None  # the section's text after the edit (add, replace)

    def summary(self) -> str:
        size = f" ({len(self.text.splitlines())} lines)" if self.text else ""
        return f"{self.op} section {self.name}{size}"

    def key(self) -> str:
        return f"{self.op} section:{self.name} {hashlib.sha256((self.text or '').encode()).hexdigest()[:12]}"

    def texts(self, before: SkillRepo) -> tuple[str, str]:
        old = next((s.text for s in split(only(before).body)[1] if s.name == self.name), "")
        return old, self.text or ""

    def diff(self, before: SkillRepo) -> str:
        doc = only(before)
        after = SkillRepo(None, [doc])
        self.apply_in(after)
        a, b = doc.to_markdown().splitlines(keepends=True), only(after).to_markdown().splitlines(keepends=True)
        return "".join(difflib.unified_diff(a, b, f"a/{doc.name}/SKILL.md", f"b/{doc.name}/SKILL.md"))

    def apply_in(self, out: SkillRepo) -> str | None:
        """Apply the edit to the document in `out`; the reason it could not be applied, else None."""
        doc = only(out)
        preamble, sections = split(doc.body)
        texts = [s.text for s in sections]
        at = next((i for i, s in enumerate(sections) if s.name == self.name), None)
        if self.op == "add" or at is None:
            if self.op == "delete":
                return f"no section {self.name!r}"
            if texts and not texts[-1].endswith("\n\n"):
                texts[-1] = texts[-1].rstrip("\n") + "\n\n"
            texts.append(self.text)
        elif self.op == "delete":
            del texts[at]
        else:
            texts[at] = self.text
        if preamble and not preamble.endswith("\n\n") and texts:
            preamble = preamble.rstrip("\n") + "\n\n"
        result = out.update(doc.name, doc.description, preamble + "".join(texts))
        return None if result.ok else result.reason


def section_edits(edits: list, document: SkillRepo) -> list[SectionEdit]:
    """A proposer's edits of the document's units (repo `Edit`s) as section edits."""
    level = section_level(only(document).body)
    headings = {s.name: s.heading for s in split(only(document).body)[1]}  # a replaced section keeps its heading
    out = []
    for e in edits:
        if e.op == "delete":
            out.append(SectionEdit("delete", e.name))
            continue
        skill = parse_skill(e.markdown, e.name)
        heading = headings.get(e.name, skill.name)
        out.append(SectionEdit(e.op, e.name, render_section(heading, skill.description, skill.body, level)))
    return out


class DocumentProposer:
    """A repo proposer pointed at one document: it reads the sections as skills, and what it
    changes comes back as section edits. A trajectory that read the document read every section."""

    def __init__(self, inner):
        self.inner, self.name = inner, inner.name

    def reflect(self, document: SkillRepo, trajectories: list) -> tuple[list, dict]:
        return self.inner.reflect(units(document), self._read_all(document, trajectories))

    def propose(self, document: SkillRepo, trajectories: list, memory, budget: int, gradient=None) -> list:
        sections = units(document)
        edits = self.inner.propose(sections, self._read_all(document, trajectories), memory, budget, gradient)
        return section_edits(edits, document)

    @staticmethod
    def _read_all(document: SkillRepo, trajectories: list) -> list:
        doc, names = only(document), [s.name for s in units(document).skills]
        return [dataclasses.replace(t, retrieved=names if doc.name in t.retrieved else []) for t in trajectories]


def seed_document(cfg, seed: SkillRepo) -> SkillRepo:
    """The document a run starts from: optimize.document (a SKILL.md, or a folder holding one),
    else the one skill of optimize.seed_skills, else a new document with only a title."""

    o = cfg.optimize
    if o.document is not None:
        path = relative_to_config(cfg, o.document)
        path = path / "SKILL.md" if path.is_dir() else path
        if not path.is_file():
            raise SkillosError(f"optimize.document: {path} is not a SKILL.md file (or a folder holding one)")
        try:
            return SkillRepo(None, [parse_skill(path.read_text(encoding="utf-8"), str(path))])
        except (SkillError, UnicodeDecodeError, OSError) as exc:
            raise SkillosError(f"optimize.document: {str(exc).splitlines()[0]}") from None
    if len(seed) > 1:
        raise SkillosError(f"optimize.target document trains one SKILL.md, but optimize.seed_skills holds "
                           f"{len(seed)}; name one with optimize.document")
    if len(seed) == 1:
        return seed.copy()
    name = slug(cfg.experiment.name or "skill")
    title = name.replace("-", " ").capitalize()
    return SkillRepo(None, [_skill(name, f"What past {cfg.env.name} tasks taught: where things are and which "
                                         "steps won. Read it before each task.", f"# {title}\n")])


def _skill(name: str, description: str, body: str):
    return Skill(name=name, description=description, body=body)


def write_version(out: Path, document: SkillRepo, candidate: int) -> None:
    """An accepted version (candidate 0: the seed) under versions/, and best_skill.md."""
    text = only(document).to_markdown()
    (out / VERSIONS).mkdir(exist_ok=True)
    write_atomic(out / VERSIONS / f"v{candidate:04d}.md", text)
    write_atomic(out / BEST, text)


def write_history(out: Path, history: list[dict], seed_rate: float | None) -> Path:
    """best_skill_history.jsonl from the run's candidate history: the seed, then each accepted
    version with its step, validation score and diff. Returns its path."""
    rows = [{"version": 0, "candidate": None, "epoch": None, "step": None, "validation_rate": seed_rate,
             "diff": "", "file": f"{VERSIONS}/v0000.md"}]
    for h in history:
        if h.get("verdict") == "accept":
            rows.append({"version": len(rows), "candidate": h["candidate"], "epoch": h["epoch"], "step": h["step"],
                         "validation_rate": h.get("candidate_rate"), "diff": h.get("diff", ""),
                         "file": f"{VERSIONS}/v{h['candidate']:04d}.md"})
    write_atomic(out / HISTORY, "".join(json.dumps(r) + "\n" for r in rows))
    return out / HISTORY
