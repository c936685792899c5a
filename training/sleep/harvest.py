"""Harvest the agent's own sessions, read-only and offline: Claude Code projects, Codex CLI
rollouts and the Codex desktop archive, into one list of `Session`s of user and assistant turns.

What is not a user intent is skipped and counted by reason: slash commands, `<...>` system
wrappers, pasted-text stubs, compaction summaries, sub-agent sessions (unless asked), Codex's
second copy of each turn, and every session skillos itself started (a replay carries
`REPLAY_MARKER`, so a night can never learn from its own replays). Lines that do not parse (a
truncated last line) are skipped; bytes that are not UTF-8 are replaced and the line kept. Every
text is redacted with the ledger's redaction before it is kept.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skillos.errors import SkillosError
from skillos.secrets import redact_text

REPLAY_MARKER = "[skillos-sleep replay]"
SOURCES = ("claude", "codex")  # what --source names; codex covers the CLI rollouts and the archive
SKIP_REASONS = {
    "subagent-session": "a Claude Code sub-agent session (harvest them with --subagents)",
    "subagent-record": "a sub-agent's record inside a main session file (isSidechain; see --subagents)",
    "skillos-replay": "a session skillos started itself (its replay marker)",
    "duplicate-session": "a Codex session already read (the archive keeps a copy of a rollout)",
    "slash-command": "a slash command, not a request",
    "system-wrapper": "a <...> system wrapper or injected instructions, not the user's words",
    "pasted-stub": "a pasted-text placeholder with no text of its own",
    "compaction-summary": "a compaction summary written by the agent, not the user",
    "duplicate-codex-turn": "the second copy of a Codex turn (logged as response_item and event_msg)",
    "unparseable-line": "a line that is not a JSON record (e.g. a truncated last line)",
    "other-record": "a record that is no turn (snapshots, summaries, token counts, reasoning)",
    "before-since": "a session that started before --since",
    "other-project": "a session outside --project",
    "over-max-sessions": "older than the --max-sessions most recent sessions",
    "no-user-turn": "a session with no user request left",
    "unreadable-file": "a transcript file that could not be read (its error is in the harvest's errors)",
}
_WRAPPER = re.compile(r"^\s*(<[A-Za-z][\w-]*>|Caveat: The messages below were generated|# AGENTS\.md instructions)")
_PASTED = re.compile(r"^\s*\[Pasted text #\d+[^\]]*\]\s*$")
_COMPACTION = "This session is being continued from a previous conversation"


@dataclass
class Turn:
    role: str  # user | assistant
    text: str
    tools: list = field(default_factory=list)  # tool names the assistant called in this turn
    skills: list = field(default_factory=list)  # skills it invoked (Claude Code's Skill tool)
    timestamp: str | None = None


@dataclass
class Session:
    source: str  # claude | codex | codex-archive
    id: str
    path: str
    project: str | None = None  # the working directory
    started: str | None = None  # ISO timestamp of the first record
    turns: list = field(default_factory=list)

    @property
    def skills(self) -> list[str]:
        return sorted({s for t in self.turns for s in t.skills})

    def to_dict(self) -> dict:
        return {**asdict(self), "skills": self.skills}

    @classmethod
    def from_dict(cls, data: dict) -> "Session":
        data = {k: v for k, v in data.items() if k != "skills"}
        return cls(**{**data, "turns": [Turn(**t) for t in data["turns"]]})


@dataclass
class Harvest:
    sessions: list
    counts: dict  # source -> {files, sessions, user_turns, assistant_turns}
    skipped: dict  # reason -> count
    repaired: dict  # lines kept after replacing bytes that were not UTF-8, per source
    digest: str | None = None
    errors: list = field(default_factory=list)  # files that could not be read, with the error

    def summary(self) -> dict:
        return {"counts": self.counts, "skipped": self.skipped,
                "skip_reasons": {k: SKIP_REASONS[k] for k in self.skipped},
                "repaired_non_utf8_lines": self.repaired, "sessions": len(self.sessions), "errors": self.errors,
                "skills_invoked": dict(Counter(s for x in self.sessions for s in x.skills)),
                "digest": self.digest}


def intent_skip(text: str) -> str | None:
    """Why a user turn is not a request (a SKIP_REASONS key), or None when it is one."""
    stripped = text.strip()
    if stripped.startswith("/"):
        return "slash-command"
    if stripped.startswith(_COMPACTION):
        return "compaction-summary"
    if _PASTED.match(stripped):
        return "pasted-stub"
    if _WRAPPER.match(stripped):
        return "system-wrapper"
    return None


def _lines(path: Path, skipped: Counter, repaired: Counter, source: str):
    """(raw text, record) per JSON line, read bounded (skillos.safety.jsonl_records): a line that
    does not parse, is not an object, is longer than MAX_LINE_BYTES or nested deeper than
    MAX_JSON_DEPTH is counted by its reason and skipped, never held whole or recursed."""
    from skillos import safety

    skips = safety.Skips(keep=0)
    try:
        for _, line, record in safety.jsonl_records(path, "transcript", skips):
            yield line, record
    finally:
        for reason, n in skips.counts.items():
            if reason == "repaired-utf8":
                repaired[source] += n
            else:
                skipped["unparseable-line" if reason in ("not-an-object", "partial-last-line") else reason] += n


def _text_of(content) -> str:
    """The text of a message's content: a string, or the text blocks of a list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict)
                     and b.get("type") in ("text", "input_text", "output_text") and isinstance(b.get("text"), str))


def _add_user(session: Session, text: str, ts, skipped: Counter, pending: list) -> None:
    reason = intent_skip(text)
    if reason:
        skipped[reason] += 1
    elif text.strip():
        pending.append(Turn("user", text.strip(), timestamp=ts))


def _add_assistant(turns: list, text: str, tools=(), skills=(), ts=None) -> None:
    """Consecutive assistant records are one turn (Claude Code writes one record per block)."""
    if turns and turns[-1].role == "assistant":
        last = turns[-1]
        last.text = "\n".join(x for x in (last.text, text.strip()) if x)
        last.tools += list(tools)
        last.skills += list(skills)
        return
    turns.append(Turn("assistant", text.strip(), list(tools), list(skills), ts))


# -- Claude Code ---------------------------------------------------------------------------------
def read_claude(path: Path, skipped: Counter, repaired: Counter, subagents: bool = False) -> Session | None:
    session = Session("claude", path.stem, str(path))
    for line, rec in _lines(path, skipped, repaired, "claude"):
        if REPLAY_MARKER in line:
            skipped["skillos-replay"] += 1
            return None
        kind, ts = rec.get("type"), rec.get("timestamp")
        if kind not in ("user", "assistant") or not isinstance(rec.get("message"), dict):
            skipped["other-record"] += 1
            continue
        if rec.get("isSidechain") and not subagents:  # a sub-agent's records inside the main file
            skipped["subagent-record"] += 1
            continue
        session.id = rec.get("sessionId") or session.id
        session.project = session.project or rec.get("cwd")
        session.started = session.started or ts
        content = rec["message"].get("content")
        if kind == "user":
            if rec.get("isCompactSummary"):
                skipped["compaction-summary"] += 1
            elif rec.get("isMeta"):  # text Claude Code injected into the user's turn (caveats, reminders)
                skipped["system-wrapper"] += 1
            elif isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                   for b in content):
                continue  # tool output fed back to the model, however deeply nested: not a request
            else:
                _add_user(session, _text_of(content), ts, skipped, session.turns)
            continue
        blocks = content if isinstance(content, list) else [{"type": "text", "text": _text_of(content)}]
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        skills = [str((b.get("input") or {}).get("skill")) for b in uses
                  if b.get("name") == "Skill" and (b.get("input") or {}).get("skill")]
        _add_assistant(session.turns, _text_of(blocks), [str(b.get("name")) for b in uses], skills, ts)
    return session


# -- Codex (CLI rollouts and the desktop archive) ---------------------------------------------------
def read_codex(path: Path, source: str, skipped: Counter, repaired: Counter) -> Session | None:
    """Each turn is logged twice (a response_item message and an event_msg): a turn equal to the
    last one of its role with no turn of the other role between them is the second copy. A user
    who repeats a request has had an answer in between, so real repeats are kept."""
    session = Session(source, path.stem, str(path))
    last = {"user": None, "assistant": None}
    for line, rec in _lines(path, skipped, repaired, source):
        if REPLAY_MARKER in line:
            skipped["skillos-replay"] += 1
            return None
        payload = rec.get("payload") if isinstance(rec.get("payload"), dict) else rec
        kind, ts = payload.get("type") or rec.get("type"), rec.get("timestamp") or payload.get("timestamp")
        session.started = session.started or ts
        session.project = session.project or payload.get("cwd")
        if rec.get("type") == "session_meta" or kind == "session_meta":
            session.id = str(payload.get("id") or session.id)
            continue
        role, text, tools = None, "", []
        if kind == "message" and payload.get("role") in ("user", "assistant"):
            role, text = payload["role"], _text_of(payload.get("content"))
        elif kind == "user_message":
            role, text = "user", str(payload.get("message") or "")
        elif kind == "agent_message":
            role, text = "assistant", str(payload.get("message") or "")
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            tools = [str(payload.get("name") or kind)]
        elif kind == "exec_command_end":
            tools = ["exec_command"]
        else:
            skipped["other-record"] += 1
            continue
        if tools:
            if session.turns and session.turns[-1].role == "assistant":
                session.turns[-1].tools += tools
            else:
                _add_assistant(session.turns, "", tools, (), ts)
            continue
        norm, prev = " ".join(text.split()), last[role]
        other = last["assistant" if role == "user" else "user"]
        if norm and prev and prev[0] == norm and (other is None or other[1] < prev[1]):
            skipped["duplicate-codex-turn"] += 1
            continue
        before = len(session.turns)
        if role == "user":
            _add_user(session, text, ts, skipped, session.turns)
        else:
            _add_assistant(session.turns, text, (), (), ts)
        if len(session.turns) > before or role == "assistant":
            last[role] = (norm, len(session.turns) - 1)
    return session


# -- the harvest ------------------------------------------------------------------------------------
_SEP = "\n\x00\n"  # no redaction pattern and no secret crosses it


def redact_session(session: Session) -> Session:
    """Every text of a session through the ledger's redaction, in one call (the redaction reads
    the environment's secrets on each call: once per session, not once per turn)."""
    texts = [session.project or "", *(t.text for t in session.turns)]
    clean = redact_text(_SEP.join(texts)).split(_SEP)
    if len(clean) != len(texts):  # never expected; redact one by one rather than misalign
        clean = [redact_text(x) for x in texts]
    session.project = clean[0] or None
    for turn, text in zip(session.turns, clean[1:]):
        turn.text = text
    return session


def parse_since(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        when = dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise SkillosError(f"sleep.since / --since: expected an ISO date like 2026-11-30, got {value!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def _started(session: Session) -> dt.datetime | None:
    try:
        return parse_since(session.started)
    except SkillosError:
        return None


def _files(s, sources, skipped: Counter):
    """(source, path) of every transcript file the sources name, sub-agent files only if asked."""
    if "claude" in sources:
        projects = Path(s.claude_dir).expanduser() / "projects"
        for path in sorted(projects.glob("**/*.jsonl")) if projects.is_dir() else []:
            sub = "subagents" in path.parts[len(projects.parts):] or path.name.startswith("agent-")
            if sub and not s.subagents:
                skipped["subagent-session"] += 1
            else:
                yield "claude", path
    codex = Path(s.codex_dir).expanduser()
    if "codex" in sources:
        for path in sorted((codex / "sessions").glob("**/rollout-*.jsonl")):
            yield "codex", path
        for path in sorted((codex / "archived_sessions").glob("*.jsonl")):
            yield "codex-archive", path


def harvest(s, home: Path | None = None, progress=None) -> Harvest:
    """Read every session the `sleep` config section `s` names; write a digest under
    `home/digests/` when `home` is given. Nothing is read over the network or written elsewhere."""
    sources = list(s.sources)
    for source in sources:
        if source not in SOURCES:
            raise SkillosError(f"sleep.sources / --source: {source!r} is not one of {', '.join(SOURCES)}")
    since = parse_since(s.since)
    skipped, repaired = Counter(), Counter()
    counts, errors = {}, []
    sessions, seen = [], set()
    files = list(_files(s, sources, skipped))
    for done, (source, path) in enumerate(files):
        if progress:
            progress(done, len(files))
        c = counts.setdefault(source, {"files": 0, "sessions": 0, "user_turns": 0, "assistant_turns": 0})
        c["files"] += 1
        try:
            session = (read_claude(path, skipped, repaired, s.subagents) if source == "claude"
                       else read_codex(path, source, skipped, repaired))
        except OSError as exc:
            skipped["unreadable-file"] += 1
            errors.append(f"{path}: {exc.strerror or exc}")
            continue
        except SkillosError as exc:  # a FIFO, a device or a folder named like a transcript
            skipped["not-a-regular-file"] += 1
            errors.append(str(exc))
            continue
        if session is None:
            continue
        if source != "claude" and session.id in seen:
            skipped["duplicate-session"] += 1
            continue
        seen.add(session.id)
        if s.project and s.project not in (session.project or "") and s.project not in str(path):
            skipped["other-project"] += 1
            continue
        started = _started(session)
        if since and (started is None or started < since):
            skipped["before-since"] += 1
            continue
        if not any(t.role == "user" for t in session.turns):
            skipped["no-user-turn"] += 1
            continue
        sessions.append(redact_session(session))
    if progress:
        progress(len(files), len(files))
    sessions.sort(key=lambda x: (x.started or "", x.id), reverse=True)
    if len(sessions) > s.max_sessions:
        skipped["over-max-sessions"] += len(sessions) - s.max_sessions
        sessions = sessions[:s.max_sessions]
    for session in sessions:
        c = counts[session.source]
        c["sessions"] += 1
        c["user_turns"] += sum(t.role == "user" for t in session.turns)
        c["assistant_turns"] += sum(t.role == "assistant" for t in session.turns)
    result = Harvest(sessions, counts, dict(sorted(skipped.items())), dict(repaired), errors=errors)
    if home is not None:
        result.digest = str(write_digest(result, Path(home)))
    return result


def write_digest(h: Harvest, home: Path) -> Path:
    from skillos.files import write_atomic

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    path = home / "digests" / f"harvest-{stamp}.jsonl"
    lines = [json.dumps({"summary": {**h.summary(), "digest": str(path)}})]
    lines += [json.dumps(x.to_dict()) for x in h.sessions]
    write_atomic(path, "\n".join(lines) + "\n")
    return path


def read_digest(path: Path) -> list[Session]:
    """The sessions of a digest harvest wrote; a damaged line is a one-line error."""
    from skillos import safety

    skips = safety.Skips()
    rows = [r for _, _, r in safety.jsonl_records(path, "harvest digest", skips)]
    if skips:
        raise SkillosError(f"{path}: damaged digest ({skips.places[0]}); run skillos sleep harvest again")
    try:
        return [Session.from_dict(r) for r in rows if "summary" not in r]
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise SkillosError(f"{path}: damaged digest ({type(exc).__name__}: {exc}); "
                           "run skillos sleep harvest again") from None
