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
from skillos.files import write_atomic
from skillos.ledger.store import default_path
from skillos.repo import parse_skill
from skillos.safety import MAX_SKILL_BYTES, RunLock, read_json_file, read_text

BEGIN, END = "<!-- skillos-sleep:learned -->", "<!-- /skillos-sleep:learned -->"


def sleep_home(s) -> Path:
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


JOURNAL = "adopt.journal.json"  # in a proposal folder while an adopt (or an undo) is between its writes
PROPOSAL_KEYS = {"night": str, "skill": str, "live_sha256": str, "proposed_sha256": str}


def _proposal_folder(proposal: str | Path, home: Path) -> Path:
    folder = Path(proposal).expanduser()
    if not folder.is_dir() and (home / "proposals" / str(proposal)).is_dir():
        folder = home / "proposals" / str(proposal)
    if not (folder / "proposal.json").exists() or not (folder / "SKILL.md").is_file():
        raise SkillosError(f"{folder}: not a sleep proposal (no proposal.json and SKILL.md)")
    return folder


def read_proposal(folder: Path) -> dict:
    """proposal.json, whole and of the right shape, or a one-line error."""
    meta = read_json_file(folder / "proposal.json", "sleep proposal")
    for key, kind in PROPOSAL_KEYS.items():
        if not isinstance(meta.get(key), kind):
            raise SkillosError(f"{folder / 'proposal.json'}: damaged sleep proposal ({key} is {meta.get(key)!r}); "
                               "run a new night")
    return meta


def _text(path: Path, what: str) -> str:
    return read_text(path, MAX_SKILL_BYTES, what)


def adopt(proposal: str | Path, home: Path, skill: str | Path | None = None, undo: bool = False) -> dict:
    """Back up the live skill, then install the proposal's SKILL.md atomically.

    Its writes (backup, skill, proposal.json) are journaled in the proposal folder first, so an
    adopt that crashed between them is completed by running it again, or undone with `undo`
    (the backup put back, when the live skill is still the proposal's). A live skill changed by
    anyone else in between is refused, never overwritten."""

    folder = _proposal_folder(proposal, home)
    meta_path, journal_path = folder / "proposal.json", folder / JOURNAL
    meta = read_proposal(folder)
    journal = read_json_file(journal_path, "adopt journal") if journal_path.exists() else None
    if journal is not None and not all(isinstance(journal.get(k), str) for k in ("target", "backup")):
        raise SkillosError(f"{journal_path}: damaged adopt journal; compare {meta['skill']} with its backups "
                           f"under {home / 'backups'} by hand")
    if undo:
        return _undo(folder, meta, journal, home)
    if meta.get("adopted_at") and journal is None:
        raise SkillosError(f"{folder}: already adopted at {meta['adopted_at']} (backup {meta.get('backup')}); "
                           "undo with --undo")
    new = _text(folder / "SKILL.md", "proposed SKILL.md")
    if sha(new) != meta["proposed_sha256"]:
        raise SkillosError(f"{folder / 'SKILL.md'}: differs from what night {meta['night']} proposed (sha256); "
                           "run a new night")
    parse_skill(new, str(folder / "SKILL.md"))
    if journal is not None:  # a crashed adopt: finish what it started
        target, backup = Path(journal["target"]), Path(journal["backup"])
    else:
        target = Path(skill).expanduser() if skill else Path(meta["skill"])
        target = target / "SKILL.md" if target.is_dir() or target.suffix != ".md" else target
        backup = home / "backups" / f"{target.parent.name}-{stamp()}-{meta['night']}" / "SKILL.md"
    if not target.is_file():
        raise SkillosError(f"--skill: {target} is not a live SKILL.md")
    live = _text(target, "live SKILL.md")
    if sha(live) not in (meta["live_sha256"], meta["proposed_sha256"] if journal is not None else None):
        raise SkillosError(f"{target}: the live skill changed since night {meta['night']} read it; "
                           "run a new night instead of adopting a stale proposal")
    if journal is None:
        write_atomic(journal_path, json.dumps({"target": str(target), "backup": str(backup), "started_at": stamp()}))
    if sha(live) == meta["live_sha256"]:
        write_atomic(backup, live)
        write_atomic(target, new)
    elif not backup.is_file():  # installed, but the backup is gone: nothing to undo with
        raise SkillosError(f"{backup}: the backup of a crashed adopt is missing; the live skill holds the proposal")
    meta.update(adopted_at=stamp(), backup=str(backup), adopted_into=str(target), completed=journal is not None)
    meta.pop("undone_at", None)
    write_atomic(meta_path, json.dumps(meta, indent=1))
    journal_path.unlink(missing_ok=True)
    return meta


def _undo(folder: Path, meta: dict, journal: dict | None, home: Path) -> dict:
    source = journal or ({"target": meta.get("adopted_into"), "backup": meta.get("backup")}
                         if meta.get("adopted_at") else None)
    if not source or not source.get("target"):
        raise SkillosError(f"{folder}: not adopted, nothing to undo")
    target, backup = Path(source["target"]), Path(source["backup"] or "")
    live = _text(target, "live SKILL.md") if target.is_file() else None
    if live is not None and sha(live) == meta["live_sha256"]:
        pass  # the install never happened (or was undone): only the records change
    elif live is None or sha(live) != meta["proposed_sha256"]:
        raise SkillosError(f"{target}: the live skill is neither the proposal nor what the night read; "
                           "it changed since: restore it by hand from the backups under " + str(home / "backups"))
    elif not backup.is_file():
        raise SkillosError(f"{backup}: the backup is missing; cannot undo")
    else:
        write_atomic(target, _text(backup, "backup SKILL.md"))
    meta.update(adopted_at=None, undone_at=stamp(), restored_from=str(backup))
    write_atomic(folder / "proposal.json", json.dumps(meta, indent=1))
    (folder / JOURNAL).unlink(missing_ok=True)
    return meta


def status(home: Path) -> dict:
    """Nights (a damaged report shown as damaged, a killed night as aborted) and proposals."""
    nights = []
    for report in sorted((home / "nights").glob("*/report.json")):
        try:
            r = read_json_file(report, "night report")
        except SkillosError as exc:
            r = {"night": report.parent.name, "status": "damaged", "verdict": str(exc)}
        nights.append({k: r.get(k) for k in ("night", "status", "verdict", "skill", "proposal", "tasks", "budget")})
    proposals = []
    for meta in sorted((home / "proposals").glob("*/proposal.json")):
        try:
            m = read_proposal(meta.parent)
        except SkillosError as exc:
            proposals.append({"path": str(meta.parent), "night": None, "skill": None, "adopted_at": None,
                              "backup": None, "damaged": str(exc)})
            continue
        proposals.append({"path": str(meta.parent), "night": m["night"], "skill": m["skill"],
                          "adopted_at": m.get("adopted_at"), "backup": m.get("backup"),
                          "unfinished_adopt": (meta.parent / JOURNAL).exists()})
    return {"home": str(home), "nights": nights, "proposals": proposals}


NIGHT = "night.json"  # written when a night starts: its ledger run, so a killed night can be closed


def recover_nights(home: Path, ledger=None) -> list[str]:
    """Nights that were killed mid-run (no report.json, nobody holding their folder's lock): each
    gets a report saying it was aborted, and its ledger run ends as aborted. Returns their ids."""

    found = []
    for folder in sorted((home / "nights").glob("*/")) if (home / "nights").is_dir() else []:
        if (folder / "report.json").exists():
            continue
        lock = RunLock(folder, wait_s=0)
        try:
            lock.acquire()
        except SkillosError:
            continue  # a night still running
        try:
            try:
                started = read_json_file(folder / NIGHT, "night record") if (folder / NIGHT).exists() else {}
            except SkillosError:
                started = {}
            run_id = started.get("run_id") if isinstance(started.get("run_id"), int) else None
            why = ("aborted: the night was killed mid-run (no report was written); nothing staged, "
                   "its sealed test (if read) stays read")
            write_atomic(folder / "report.json", json.dumps({
                "night": folder.name, "status": "aborted", "stopped_because": "killed mid-run", "verdict": why,
                "skill": started.get("skill"), "proposal": None, "run_id": run_id,
                "experiment_id": started.get("experiment_id"), "candidates": [], "accepted": 0}, indent=1))
            if ledger is not None and run_id is not None:
                ledger.end_run(run_id, "aborted", why)
                experiment = started.get("experiment_id")
                if isinstance(experiment, int):
                    ledger.correct("experiments", experiment, "status", f"night {folder.name} aborted",
                                   value="aborted")
            found.append(folder.name)
        finally:
            lock.release()
    return found
