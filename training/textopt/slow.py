"""The slow update and the meta skill (SkillOpt's two slow loops), `optimize.slow_update`.

At each epoch's end the run looks back over the epoch's step records (gradients, admitted and
refused edits, verdicts) and writes:

* **cross-epoch guidance** into the protected block of the skill (`textual.BLOCK_START` ...
  `BLOCK_END`; in repo mode the block lives in its own skill, `GUIDANCE_SKILL`). Ordinary steps
  never edit it (`StepBudget.admit` refuses any edit that touches it); the slow update is one more
  candidate of the epoch, gated like any other, so guidance that does not help is rejected.
  Consolidation rewrites the block, it does not only append: the rules merge each subject's
  counts over the epochs, let the newest epoch's word on a subject replace an older one that it
  contradicts (a skill that failures now cite is no longer "held"), and keep the block within
  MAX_GUIDANCE_LINES; a model optimizer is handed the old block with the epoch's gradients and
  asked for the whole block rewritten.
* **lessons about editing** in the meta skill (how to edit skills), which the model-backed
  proposer reads in its instructions: one section, rewritten at each epoch end over every epoch
  so far. The heuristic proposer's rules read no prose: the step record says which meta-skill
  version each step ran with all the same.

Both are versioned in the run folder: `slow_update/after-step-NNNN.md` (the guidance proposed at
that epoch end) and `meta_skill/v0000.md` (as given), `meta_skill/after-step-NNNN.md` (after each
epoch end). With a model optimizer the guidance is the model's summary of the epoch; a failed call
falls back to the rules' summary, and the file says which.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from skillos.errors import SkillosError
from skillos.repo import SkillRepo
from skillos.training.textopt.textual import BLOCK_END, BLOCK_START, protected_block, with_block
from skillos.evals.backends.chat import BackendError
from skillos.files import write_atomic
from skillos.repo import parse_skill
from skillos.repo.skill import Skill, SkillError
from skillos.training.textopt.document import split

GUIDANCE_SKILL = "cross-epoch-guidance"
META_DIR, SLOW_DIR = "meta_skill", "slow_update"
DEFAULT_META = Path(__file__).resolve().parents[1] / "configs" / "meta-skill" / "SKILL.md"
MAX_GUIDANCE_LINES = 30  # the block keeps the newest epochs' lines within this


@dataclass(frozen=True)
class BlockEdit:
    """The slow update's change: one skill's text with its protected block rewritten."""

    name: str
    markdown: str
    op: str = "slow-update"

    def summary(self) -> str:
        return f"slow update of {self.name}'s guidance block ({len(block_text(self.markdown).splitlines())} lines)"

    def key(self) -> str:
        return f"slow-update {self.name} {hashlib.sha256(self.markdown.encode()).hexdigest()[:12]}"

    def texts(self, before: SkillRepo) -> tuple[str, str]:
        old = before.get(self.name)
        return (old.to_markdown() if old else ""), self.markdown

    def diff(self, before: SkillRepo) -> str:
        a, b = (t.splitlines(keepends=True) for t in self.texts(before))
        return "".join(difflib.unified_diff(a, b, f"a/{self.name}/SKILL.md", f"b/{self.name}/SKILL.md"))

    def apply_in(self, out: SkillRepo) -> str | None:
        skill = parse_skill(self.markdown, self.name)
        result = (out.insert if out.get(self.name) is None else out.update)(skill.name, skill.description, skill.body)
        return None if result.ok else result.reason


def block_text(markdown: str) -> str:
    """The guidance inside a text's protected block ("" when it has none)."""
    block = protected_block(markdown) or ""
    return block[len(BLOCK_START):-len(BLOCK_END)].strip("\n") if block else ""


def guidance_rules(epoch: int, steps: list[dict]) -> str:
    """The epoch in a few lines, from its step records: what kept failing, what was revised and
    what held, what the gate accepted."""
    revise, missing, keep = Counter(), Counter(), Counter()
    for s in steps:
        for line in (s.get("gradient") or "").splitlines():
            if m := re.match(r"- revise (\S+):", line):
                revise[m.group(1)] += 1
            elif m := re.match(r"- add: \d+ failed (\S+) games read no skill", line):
                missing[m.group(1)] += 1
            elif m := re.match(r"- keep (\S+):", line):
                keep[m.group(1)] += 1
    tried = [s for s in steps if s.get("candidate") is not None]
    accepted = sum(s.get("verdict") == "accept" for s in tried)
    lines = [f"Epoch {epoch + 1} ({len(steps)} steps, {len(tried)} candidates, {accepted} accepted):"]
    lines += [f"- kept failing: {k} tasks read no skill in {n} of {len(steps)} steps" for k, n in missing.most_common(3)]
    lines += [f"- failures kept citing {u} ({n} of {len(steps)} steps): follow it with care" for u, n in
              revise.most_common(3)]
    lines += [f"- held: {u} (only won games cited it, {n} steps)" for u, n in keep.most_common(3)]
    return "\n".join(lines)


# "Epoch 2 (3 steps, 2 candidates, 1 accepted):" (the rules'), or a model's "Epochs 1-3:" (no counts)
_HEADER = re.compile(r"^Epochs? (?:(\d+)-)?(\d+)(?: \((\d+) steps, (\d+) candidates, (\d+) accepted\))?:$")
_LINES = {  # kind -> (the line a rule writes, read back: subject, count, of)
    "failing": re.compile(r"^- kept failing: (\S+) tasks read no skill in (\d+) of (\d+) steps$"),
    "citing": re.compile(r"^- failures kept citing (\S+) \((\d+) of (\d+) steps\): follow it with care$"),
    "held": re.compile(r"^- held: (\S+) \(only won games cited it, (\d+) steps\)$"),
}
CONTRADICTS = {"citing": "held", "held": "citing"}  # a newer word on a skill replaces the older opposite


def _line(kind: str, subject: str, n: int, of: int) -> str:
    return {"failing": f"- kept failing: {subject} tasks read no skill in {n} of {of} steps",
            "citing": f"- failures kept citing {subject} ({n} of {of} steps): follow it with care",
            "held": f"- held: {subject} (only won games cited it, {n} steps)"}[kind]


def consolidate(old: str, new: str) -> str:
    """The guidance block rewritten from the old block and the epoch's new guidance (the rules'):
    one line per subject and kind with its counts summed over the epochs, a subject's newest word
    replacing an older one it contradicts, one header over all the epochs, lines the rules did not
    write (a model's) kept newest first, all within MAX_GUIDANCE_LINES. A count is of every step the
    header counts (a subject not reported in an epoch was not seen in its steps); where a header
    came without counts (a model's), the header says so and each line keeps its own."""
    epochs, totals, counted, merged, other = [], [0, 0, 0], True, {}, []
    for newer, text in enumerate((old, new)):
        for line in (x.strip() for x in text.splitlines()):
            if m := _HEADER.match(line):
                epochs += [int(m.group(1) or m.group(2)), int(m.group(2))]
                if m.group(3) is None:
                    counted = False
                else:
                    totals = [t + int(v) for t, v in zip(totals, m.groups()[2:])]
            elif found := next(((k, m) for k, p in _LINES.items() if (m := p.match(line))), None):
                kind, m = found
                subject, n, of = m.group(1), int(m.group(2)), int(m.group(3)) if kind != "held" else 0
                if newer:
                    merged.pop((subject, CONTRADICTS.get(kind)), None)  # the newest epoch's word stands
                had = merged.get((subject, kind), (0, 0))
                merged[(subject, kind)] = (had[0] + n, had[1] + of)
            elif line:
                other.append((newer, line))
    out = []
    if epochs:
        span = f"Epoch {epochs[0]}" if len(set(epochs)) == 1 else f"Epochs {min(epochs)}-{max(epochs)}"
        out.append(f"{span} ({totals[0]} steps, {totals[1]} candidates, {totals[2]} accepted):" if counted
                   else f"{span} (some epochs summarized by a model: counts are per line):")
    order = ("failing", "citing", "held")
    for (subject, kind), (n, of) in sorted(merged.items(), key=lambda kv: (order.index(kv[0][1]), -kv[1][0], kv[0][0])):
        out.append(_line(kind, subject, n, totals[0] if counted and epochs else of))
    out += [line for _, line in sorted(other, key=lambda x: -x[0])]
    return "\n".join(out[:MAX_GUIDANCE_LINES])


def guidance_model(chat, epoch: int, steps: list[dict], old: str = "") -> tuple[str, str]:
    """(the whole guidance block, source): the old block consolidated with the epoch's by the
    rules, or the model's rewrite of the old block given the epoch's gradients."""
    rules = consolidate(old, guidance_rules(epoch, steps))
    if chat is None:
        return rules, "rules"
    gradients = "\n\n".join(f"Step {s['step'] + 1}: {s.get('gradient', '')}" for s in steps)
    prompt = ("Below are the guidance an agent keeps across epochs of skill optimization and the textual gradients "
              "of the epoch that just ended. Rewrite the whole guidance: merge what repeats, drop what the new "
              "gradients contradict, keep what still holds, add what the epoch taught. At most 8 short lines. "
              "Lines only.")
    user = f"Guidance so far:\n{old or '(none)'}\n\nEpoch {epoch + 1} gradients:\n{gradients}"
    try:
        text = chat.chat([{"role": "system", "content": prompt}, {"role": "user", "content": user}]).text
    except BackendError as exc:
        return rules, f"rules (model failed: {str(exc)[:120]})"
    text = "\n".join(x.rstrip() for x in text.replace(BLOCK_START, "").replace(BLOCK_END, "").splitlines()[:8]
                     if x.strip())
    return (f"Epochs 1-{epoch + 1}:\n{text}" if text else rules), "model"


def current_guidance(incumbent: SkillRepo, target: str) -> str:
    """What the incumbent's guidance block holds now ("" when it has none)."""
    skill = incumbent.skills[0] if target == "document" else incumbent.get(GUIDANCE_SKILL)
    return block_text(skill.to_markdown()) if skill is not None else ""


def slow_edit(incumbent: SkillRepo, target: str, guidance: str, env_name: str) -> BlockEdit | None:
    """The incumbent's guidance block rewritten to `guidance` (the whole block, consolidated);
    None when nothing would change."""
    if target == "document":
        skill = incumbent.skills[0]
    else:
        skill = incumbent.get(GUIDANCE_SKILL) or Skill(
            GUIDANCE_SKILL, f"Guidance kept across epochs of optimizing these {env_name} skills: what kept "
                            "failing and what held.", "# Cross-epoch guidance\n")
    old = block_text(skill.to_markdown())
    lines = guidance.strip("\n").splitlines()[:MAX_GUIDANCE_LINES]
    if not lines:
        return None
    if target == "document" and not old:  # a new block goes before the first section: no section holds it

        preamble, sections = split(skill.body)
        body = with_block(preamble, "\n".join(lines)) + "".join(s.text for s in sections)
    else:
        body = with_block(skill.body, "\n".join(lines))
    new = Skill(skill.name, skill.description, body, skill.extra).to_markdown()
    current = incumbent.get(skill.name)
    return None if current is not None and current.to_markdown() == new else BlockEdit(skill.name, new)


LESSONS = "## Editing lessons (rewritten at each epoch end)"


def with_lessons(meta: str, epoch: int, steps: list[dict], history: list[dict]) -> str:
    """The meta skill with its lessons section rewritten over every epoch so far (`steps` and
    `history`: all of them), not one more section appended per epoch."""
    head = meta.split("\n" + LESSONS, 1)[0].rstrip("\n")
    lessons = meta_lessons(epoch, steps, history).replace(f"### Epoch {epoch + 1}",
                                                          f"Over epochs 1-{epoch + 1}:", 1)
    return f"{head}\n\n{LESSONS}\n\n{lessons}"


def meta_lessons(epoch: int, steps: list[dict], history: list[dict]) -> str:
    """The editing lessons of `steps` and `history`, as a section of the meta skill."""
    refused = [r for s in steps for r in (s.get("budget") or {}).get("refusals", [])]
    over = [r for r in refused if "exceed" in r["reason"]]
    ops = Counter()
    for h in history:
        for e in h.get("edits", []):
            ops[(e.split()[0], h["verdict"] == "accept")] += 1
    lines = [f"### Epoch {epoch + 1}"]
    if over:
        sizes = sorted(r["changed_lines"] for r in over)
        lines.append(f"- {len(over)} edits were refused over the budget (median {sizes[len(sizes) // 2]} changed "
                     "lines): propose smaller ones.")
    for op in sorted({o for o, _ in ops}):
        tried, won = ops[(op, True)] + ops[(op, False)], ops[(op, True)]
        lines.append(f"- {op} edits: {won} of {tried} in accepted candidates.")
    if len(lines) == 1:
        lines.append("- no edit was tried.")
    return "\n".join(lines) + "\n"


def read_meta(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8")
        parse_skill(text, str(path))
    except (OSError, UnicodeDecodeError, SkillError) as exc:
        raise SkillosError(f"optimize.meta_skill: {str(exc).splitlines()[0]}") from None
    return text


def latest_meta(out: Path, source: Path, next_step: int) -> tuple[str, str]:
    """(meta skill text, its version's file name) a run at step `next_step` uses: the newest
    version written by an epoch end before it, else the one given (copied as v0000.md)."""
    folder = out / META_DIR
    done = sorted(p for p in folder.glob("after-step-*.md") if int(p.stem.rsplit("-", 1)[1]) < next_step) \
        if folder.is_dir() else []
    if done:
        return read_meta(done[-1]), done[-1].name
    text = read_meta(source)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / "v0000.md", text)
    return text, "v0000.md"


def write_versions(out: Path, g: int, guidance: str, source: str, meta: str) -> str:
    """The epoch end's guidance and meta skill versions; returns the meta skill's file name."""
    (out / SLOW_DIR).mkdir(exist_ok=True)
    write_atomic(out / SLOW_DIR / f"after-step-{g:04d}.md", f"<!-- source: {source} -->\n{guidance}\n")
    name = f"after-step-{g:04d}.md"
    write_atomic(out / META_DIR / name, meta)
    return name
