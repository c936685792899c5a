"""Where a night's results live, and the only way they reach a live skill.

`$SKILLOS_HOME/sleep/` (or `sleep.home`) holds `digests/` (harvests), `nights/<id>/` (tasks,
history, report, the sealed test's seal), `proposals/<id>/` (SKILL.md, diff.patch, report.json,
report.md, tasks.jsonl with the sessions each task came from), `backups/` and `rejected.json`
(rejected edits, kept across nights). A night writes a proposal folder whole (a temporary folder
renamed into place) and never touches the live skill; `adopt` backs the live skill up and
installs the proposal atomically, refusing when the live skill changed since the night read it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from pathlib import Path

from skillos.errors import SkillosError

BEGIN, END = "<!-- skillos-sleep:learned -->", "<!-- /skillos-sleep:learned -->"


def sleep_home(s) -> Path:
    from skillos.ledger.store import default_path

    return Path(s.home).expanduser() if s.home else default_path().parent / "sleep"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def stamp() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


# -- the learned block ---------------------------------------------------------------------------
def learned_lines(body: str) -> list[str]:
    if BEGIN not in body or END not in body:
        return []
    inner = body.split(BEGIN, 1)[1].split(END, 1)[0]
    return [line for line in inner.splitlines() if line.strip() and not line.startswith("## Learned")]


def with_learned(body: str, lines: list[str]) -> str:
    """The body with its learned block holding `lines`; a body without one gets it at the end.
    Nothing outside the block changes."""
    block = "\n".join([BEGIN, "## Learned from your sessions", *[x for x in lines if not x.startswith("## Learned")],
                       END])
    if BEGIN in body and END in body:
        head, rest = body.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1]
    return body.rstrip("\n") + "\n\n" + block + "\n"


def outside_block(body: str) -> str:
    """The text outside the learned block (whitespace at its edges aside)."""
    if BEGIN in body and END in body:
        head, rest = body.split(BEGIN, 1)
        return head.rstrip() + "\n" + rest.split(END, 1)[1].strip()
    return body.rstrip() + "\n"


def read_live_skill(path) -> tuple[Path, str]:
    """(SKILL.md path, its text) of a live skill folder or file."""
    from skillos.repo import parse_skill

    p = Path(path).expanduser()
    p = p / "SKILL.md" if p.is_dir() else p
    if not p.is_file():
        raise SkillosError(f"sleep.skill: {p} is not a SKILL.md (point it at the live skill's folder)")
    text = p.read_text(encoding="utf-8")
    parse_skill(text, str(p))  # refuses an invalid skill with its reason
    return p, text


# -- proposals -----------------------------------------------------------------------------------
def write_proposal(home: Path, night_id: str, skill_path: Path, before: str, after: str, report: dict,
                   tasks: list) -> Path:
    """The proposal folder, written whole or not at all."""
    import difflib

    final = home / "proposals" / f"{night_id}-{skill_path.parent.name}"
    tmp = home / "proposals" / f".{final.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    name = skill_path.parent.name
    diff = "".join(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        f"a/{name}/SKILL.md", f"b/{name}/SKILL.md"))
    meta = {"night": night_id, "skill": str(skill_path), "live_sha256": sha(before), "proposed_sha256": sha(after),
            "created_at": stamp()}
    (tmp / "SKILL.md").write_text(after, encoding="utf-8")
    (tmp / "diff.patch").write_text(diff, encoding="utf-8")
    (tmp / "report.json").write_text(json.dumps({**report, "proposal": meta}, indent=1), encoding="utf-8")
    (tmp / "report.md").write_text(render_report(report), encoding="utf-8")
    (tmp / "tasks.jsonl").write_text("".join(json.dumps(t.to_dict()) + "\n" for t in tasks), encoding="utf-8")
    (tmp / "proposal.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
    os.replace(tmp, final)
    return final


def render_report(report: dict) -> str:
    lines = [f"# skillos sleep night {report['night']}", "", f"verdict: {report['verdict']}", "",
             f"tasks: {report['tasks']['train']} train, {report['tasks']['validation']} validation, "
             f"{report['tasks']['test']} sealed test (from {report['harvest_sessions']} sessions)", "",
             "## Candidates (gate on validation)"]
    for c in report["candidates"]:
        lines.append(f"- step {c['step']}: {c['verdict']} ({c['reason']}); incumbent {c['incumbent']}, "
                     f"candidate {c['candidate']}; paired {c['n_paired']} of {c['n_tasks']}, "
                     f"{c['n_unmeasured']} unmeasured; edits: {'; '.join(c['edits'])}")
    t = report.get("test")
    if t:
        lines += ["", "## Sealed test (read once)", f"- {t['verdict']}"]
    b = report["budget"]
    lines += ["", f"budget: {b['calls']} of {b['max_calls']} calls, {b['tokens']} of {b['max_tokens']} tokens, "
                  f"{b['minutes']:.1f} of {b['max_minutes']:g} minutes"]
    return "\n".join(lines) + "\n"


def adopt(proposal: str | Path, home: Path, skill: str | Path | None = None) -> dict:
    """Back up the live skill, then install the proposal's SKILL.md atomically."""
    from skillos.repo import parse_skill
    from skillos.repo.store import write_atomic

    folder = Path(proposal).expanduser()
    if not folder.is_dir() and (home / "proposals" / str(proposal)).is_dir():
        folder = home / "proposals" / str(proposal)
    meta_path = folder / "proposal.json"
    if not meta_path.is_file() or not (folder / "SKILL.md").is_file():
        raise SkillosError(f"{folder}: not a sleep proposal (no proposal.json and SKILL.md)")
    meta = json.loads(meta_path.read_text())
    if meta.get("adopted_at"):
        raise SkillosError(f"{folder}: already adopted at {meta['adopted_at']} (backup {meta.get('backup')})")
    target = Path(skill).expanduser() if skill else Path(meta["skill"])
    target = target / "SKILL.md" if target.is_dir() or target.suffix != ".md" else target
    if not target.is_file():
        raise SkillosError(f"--skill: {target} is not a live SKILL.md")
    live = target.read_text(encoding="utf-8")
    if sha(live) != meta["live_sha256"]:
        raise SkillosError(f"{target}: the live skill changed since night {meta['night']} read it; "
                           "run a new night instead of adopting a stale proposal")
    new = (folder / "SKILL.md").read_text(encoding="utf-8")
    parse_skill(new, str(folder / "SKILL.md"))
    backup = home / "backups" / f"{target.parent.name}-{stamp()}-{meta['night']}" / "SKILL.md"
    write_atomic(backup, live)
    write_atomic(target, new)
    meta.update(adopted_at=stamp(), backup=str(backup), adopted_into=str(target))
    write_atomic(meta_path, json.dumps(meta, indent=1))
    return meta


def status(home: Path) -> dict:
    nights = []
    for report in sorted((home / "nights").glob("*/report.json")):
        r = json.loads(report.read_text())
        nights.append({k: r.get(k) for k in ("night", "status", "verdict", "skill", "proposal", "tasks", "budget")})
    proposals = []
    for meta in sorted((home / "proposals").glob("*/proposal.json")):
        m = json.loads(meta.read_text())
        proposals.append({"path": str(meta.parent), "night": m["night"], "skill": m["skill"],
                          "adopted_at": m.get("adopted_at"), "backup": m.get("backup")})
    return {"home": str(home), "nights": nights, "proposals": proposals}
