"""Mine checkable tasks from harvested sessions: requests the user repeated or rephrased, said
were wrong (in words, or by stopping the agent or rejecting its tool call: the harvest's
correction signals), or made of a skill. Each task carries the checks its outcome is judged by: rules
(contains, not_contains, regex, section, length, tool, no_refusal) or a rubric for the judge.
A task with no check is dropped and counted. Tasks are split train / validation / sealed test
by content hash, so a task lands in the same split every night and the splits are disjoint.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skillos.errors import SkillosError
from skillos import safety

RULES = ("contains", "not_contains", "regex", "section", "length", "tool", "no_refusal", "rubric")
SPLITS = ("train", "validation", "test")
_CORRECTION = re.compile(
    r"^\s*(no\b|nope\b|wrong\b|that'?s (not|wrong|incorrect)|not what|incorrect|you forgot|you missed|"
    r"you didn'?t|still\b|make it\b|it should|actually\b|this is wrong|doesn'?t work|try again)", re.I)
_QUOTED = re.compile(r"`([^`\n]{1,80})`|\"([^\"\n]{1,80})\"")
_NEGATED = re.compile(r"(don'?t|do not|never|without|remove|drop)\b[^`\"\n]{0,30}[`\"]([^`\"\n]{1,80})[`\"]", re.I)
_SHORTER = re.compile(r"\b(under|at most|no more than|fewer than)\s+(\d+)\s+(words|lines|characters|chars)\b", re.I)
_REFUSAL = re.compile(r"\b(I can(no|')t help|I'?m (sorry|unable)|I am unable|I won'?t|as an AI)\b", re.I)
_WORD = re.compile(r"[a-z0-9][a-z0-9_\-]+")


@dataclass
class Task:
    id: str  # content hash of the prompt: the split and the dedup key
    prompt: str
    checks: list  # every one must pass: [{"rule": ..., ...}]
    why: str  # corrected | repeated | skill | reviewed
    sessions: list = field(default_factory=list)  # the sessions it was mined from
    skill: str | None = None  # the skill those sessions invoked
    split: str = ""
    origin: str | None = None  # a dreamed variant: the id of the mined task it rewords (training/textopt/sleep/dream.py)

    def to_dict(self) -> dict:
        return asdict(self)


def task_id(prompt: str) -> str:
    return hashlib.sha256(" ".join(prompt.split()).lower().encode()).hexdigest()[:16]


def split_of(tid: str, validation_share: float, test_share: float) -> str:
    u = int(hashlib.sha256(f"skillos-sleep-split|{tid}".encode()).hexdigest()[:8], 16) / 2 ** 32
    return "test" if u < test_share else "validation" if u < test_share + validation_share else "train"


def similarity(a: str, b: str) -> float:
    x, y = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(x & y) / len(x | y) if x | y else 0.0


def checks_from_feedback(feedback: str) -> list[dict]:
    """Rules the user's correction states: quoted or backticked text it asks for (a markdown
    heading becomes a section check), text it forbids, a length bound, no refusal."""
    checks, forbidden = [], {m.group(2) for m in _NEGATED.finditer(feedback)}
    for match in _QUOTED.finditer(feedback):
        value = (match.group(1) or match.group(2)).strip()
        if value in forbidden:
            checks.append({"rule": "not_contains", "value": value})
        elif value.startswith("#"):
            checks.append({"rule": "section", "value": value.lstrip("#").strip()})
        elif value:
            checks.append({"rule": "contains", "value": value})
    bound = _SHORTER.search(feedback)
    if bound:
        unit = {"words": "words", "lines": "lines"}.get(bound.group(3).lower(), "chars")
        checks.append({"rule": "length", "max": int(bound.group(2)), "unit": unit})
    if re.search(r"\b(refus|apologi[sz]e)", feedback, re.I):
        checks.append({"rule": "no_refusal"})
    return checks[:4]


def validate_checks(checks, where: str) -> list[dict]:
    if not isinstance(checks, list) or not checks:
        raise SkillosError(f"{where}: 'checks' must be a non-empty list")
    for i, c in enumerate(checks):
        rule = c.get("rule") if isinstance(c, dict) else None
        if rule not in RULES:
            raise SkillosError(f"{where}: checks[{i}].rule {rule!r} is not one of {', '.join(RULES)}")
        need = {"contains": "value", "not_contains": "value", "regex": "value", "section": "value",
                "tool": "name", "rubric": "rubric"}.get(rule)
        if need and not str(c.get(need) or "").strip():
            raise SkillosError(f"{where}: checks[{i}] ({rule}) needs {need!r}")
        if rule == "regex":
            try:
                re.compile(c["value"])
            except re.error as exc:
                raise SkillosError(f"{where}: checks[{i}].value is not a regex ({exc})") from None
        if rule == "length" and c.get("min") is None and c.get("max") is None:
            raise SkillosError(f"{where}: checks[{i}] (length) needs min or max")
    return checks


def mine(sessions, judge: bool = False, unchecked: list | None = None) -> tuple[list[Task], dict]:
    """Tasks and the counts of what was dropped. `judge`: a judge is configured, so a request
    the user corrected without a checkable rule gets the correction as its rubric. `unchecked`:
    a list that receives each request dropped for want of a check ({prompt, why, session, skill,
    feedback}), for the LLM miner."""
    found: dict[str, Task] = {}
    dropped = Counter()
    skill_requests: dict = {}  # skill -> [(request, session)] of requests answered with it
    candidates = 0

    def add(prompt, checks, why, session, skill, feedback=""):
        nonlocal candidates
        candidates += 1
        if not checks:
            dropped["no-check"] += 1
            if unchecked is not None:
                unchecked.append({"prompt": prompt, "why": why, "session": session.id, "skill": skill,
                                  "feedback": feedback})
            return
        tid = task_id(prompt)
        if tid in found:
            dropped["duplicate"] += 1
            found[tid].sessions = sorted(set(found[tid].sessions) | {session.id})
            return
        found[tid] = Task(tid, prompt, checks, why, [session.id], skill)

    for session in sessions:
        turns = session.turns
        users = [i for i, t in enumerate(turns) if t.role == "user"]
        for a, b in zip(users, users[1:]):
            request, reply = turns[a].text, turns[b].text
            answered = any(t.role == "assistant" for t in turns[a + 1:b])
            skills = [s for t in turns[a + 1:b] for s in t.skills]
            skill = skills[0] if skills else None
            if not answered:
                continue
            # the user stopped the agent or refused its tool call on this request: what they typed
            # next is their correction, whatever words it starts with
            if _CORRECTION.match(reply) or turns[a].corrections:
                checks = checks_from_feedback(reply)
                if not checks and judge:
                    checks = [{"rule": "rubric", "rubric": f"The answer does what was asked and what the user's "
                                                          f"correction demanded: {reply[:500]}"}]
                add(request, checks, "corrected", session, skill, reply)
            elif similarity(request, reply) >= 0.6:
                add(request, checks_from_feedback(reply) or checks_from_feedback(request) or (
                    [{"rule": "rubric", "rubric": f"The answer fully does what was asked: {reply[:500]}"}]
                    if judge else []), "repeated", session, skill, reply)
            elif skill:
                skill_requests.setdefault(skill, []).append((request, session))
    for skill, requests in skill_requests.items():  # the same skill invoked for similar requests
        for i, (request, session) in enumerate(requests):
            if any(similarity(request, other) >= 0.3 for j, (other, _) in enumerate(requests) if j != i):
                add(request, checks_from_feedback(request) or (
                    [{"rule": "rubric", "rubric": f"The answer does what was asked with the {skill} skill."}]
                    if judge else []), "skill", session, skill)
            else:
                dropped["skill-used-once"] += 1
    tasks = sorted(found.values(), key=lambda t: t.id)
    return tasks, {"candidates": candidates, "tasks": len(tasks), "dropped": dict(dropped)}


def assign_splits(tasks: list[Task], validation_share: float, test_share: float) -> dict:
    for t in tasks:
        t.split = split_of(t.id, validation_share, test_share)
    return {s: [t for t in tasks if t.split == s] for s in SPLITS}


def load_tasks(path: str | Path) -> list[Task]:
    """A reviewed task file: JSONL, one {"prompt", "checks", optional "sessions", "skill"} a line."""
    path = Path(path).expanduser()
    skips = safety.Skips()
    tasks, seen = [], set()
    # bounded: a FIFO or device is refused, a line too long or too deep is not read whole
    for n, _, row in safety.jsonl_records(path, "task file", skips, objects_only=False):
        where = f"{path} line {n}"
        if not isinstance(row, dict) or not str(row.get("prompt") or "").strip():
            raise SkillosError(f"{where}: a task needs a non-empty 'prompt'")
        checks = validate_checks(row.get("checks"), where)
        tid = task_id(row["prompt"])
        if tid in seen:
            raise SkillosError(f"{where}: the same prompt as an earlier task")
        seen.add(tid)
        tasks.append(Task(tid, row["prompt"], checks, "reviewed", list(row.get("sessions") or []), row.get("skill")))
    if skips:  # a damaged line is an error, never a task quietly left out
        words = {"unparseable-line": "not a JSON object", "partial-last-line": "not a JSON object"}
        place, _, reason = skips.places[0].rpartition(": ")
        raise SkillosError(f"{path}{place[len(path.name):]}: {words.get(reason, reason)} "
                           f"({skips.summary()}); fix the task file")
    if not tasks:
        raise SkillosError(f"{path}: no tasks")
    return tasks


def is_refusal(text: str) -> bool:
    return bool(_REFUSAL.search(text or ""))
