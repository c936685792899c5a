"""Harvest the agent's own sessions, read-only and offline: Claude Code projects, Codex CLI
rollouts and the Codex desktop archive, into one list of `Session`s of user and assistant turns.

What is not a user intent is skipped and counted by reason: slash commands, `<...>` system
wrappers, pasted-text stubs, compaction summaries, sub-agent sessions (unless asked), Codex's
second copy of each turn, and every session skillos itself started (a replay carries
`REPLAY_MARKER`, so a night can never learn from its own replays).

A request is what each tool itself logs as one. Codex: the `user_message` events (its
`response_item` user messages are a second copy of each, plus injected context, and are not
paired by text: sanitized logs differ in text). Claude Code: the user's own words, not its
interruption markers, tool results, task notifications or command wrappers; an interruption or a
rejected tool use is kept as a correction signal on the request it interrupted, which the miner
reads. Record types and versions a reader does not know are counted, never a crash; Codex lines
are checked against the shape of Codex's own `RolloutLine` type (CODEX_LINE).

Lines that do not parse (a truncated last line) are skipped; bytes that are not UTF-8 are
replaced and the line kept. Every text is redacted with the ledger's redaction before it is kept.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from skillos import safety
from skillos.errors import SkillosError
from skillos.secrets import redact_text
from skillos.files import write_atomic

REPLAY_MARKER = "[skillos-sleep replay]"
SOURCES = ("claude", "codex")  # what --source names; codex covers the CLI rollouts and the archive
SKIP_REASONS = {
    **safety.SKIP_WORDS,  # what the bounded line reader skips (too long, too deep, ...)
    "subagent-session": "a Claude Code sub-agent session (harvest them with --subagents)",
    "subagent-record": "a sub-agent's record inside a main session file (isSidechain; see --subagents)",
    "skillos-replay": "a session skillos started itself (its replay marker)",
    "duplicate-session": "a Codex session already read (the archive keeps a copy of a rollout)",
    "slash-command": "a slash command, not a request",
    "system-wrapper": "a <...> system wrapper or injected instructions, not the user's words",
    "pasted-stub": "a pasted-text placeholder with no text of its own",
    "compaction-summary": "a compaction summary written by the agent, not the user",
    "duplicate-codex-turn": "the second copy of a Codex turn (logged as response_item and event_msg)",
    "unparseable-line": "a line that is not a JSON record (e.g. a truncated last line)",  # the reader's, in harvest's words
    "other-record": "a record that is no turn (snapshots, summaries, token counts, reasoning)",
    "before-since": "a session that started before --since",
    "other-project": "a session outside --project",
    "over-max-sessions": "older than the --max-sessions most recent sessions",
    "no-user-turn": "a session with no user request left",
    "unreadable-file": "a transcript file that could not be read (its error is in the harvest's errors)",
    "interruption-marker": "Claude Code's '[Request interrupted by user]' marker: a correction signal, not a request",
    "schema-mismatch": "a Codex line whose shape is not Codex's RolloutLine (see harvest.CODEX_LINE)",
}
# Claude Code writes these as the user's text when the user stops the agent.
_INTERRUPTED = re.compile(r"^\s*\[Request interrupted by user[^\]]*\]\s*$")
# ...and this as the tool result when the user rejects a tool call.
_REJECTED = re.compile(r"^\s*The user doesn'?t want to (proceed with|take) this tool use")
# Codex's RolloutLine (codex-rs/protocol/src/protocol.rs): {timestamp, ordinal?, type, payload}, `type` the
# snake_case tag of RolloutItem. The schema `codex-write-rollout-line-schema` generates from that type
# needs cargo and crates.io to build; this is the part of it the harvest reads: the envelope, and the
# fields of the two payloads a request or a reply comes from.
CODEX_LINE = {
    "item_types": ("session_meta", "response_item", "compacted", "turn_context", "event_msg",
                   "inter_agent_communication", "inter_agent_communication_metadata", "world_state"),
    "payload_fields": {("event_msg", "user_message"): {"message": str}, ("event_msg", "agent_message"): {"message": str},
                       ("response_item", "message"): {"role": str, "content": list}},
}
# Codex lists the skills it found in its instructions: "- name: description (file: path)".
_CODEX_SKILLS = re.compile(r"^## Skills\s*$(.*?)(?=^#{1,2} |\Z)", re.M | re.S)
_CODEX_SKILL_LINE = re.compile(r"^- ([\w.:-]+): .*\(file: [^)]*SKILL\.md\)\s*$", re.M)
_WRAPPER = re.compile(r"^\s*(<[A-Za-z][\w-]*>|Caveat: The messages below were generated|# AGENTS\.md instructions)")
_PASTED = re.compile(r"^\s*\[Pasted text #\d+[^\]]*\]\s*$")
_COMPACTION = "This session is being continued from a previous conversation"


@dataclass
class Turn:
    role: str  # user | assistant
    text: str
    tools: list = field(default_factory=list)  # tool names the assistant called in this turn
    skills: list = field(default_factory=list)  # skills it invoked (Skill tool, attributionSkill)
    timestamp: str | None = None
    # user turn: the user stopped the agent on it ("interrupted") or refused a tool call it made
    # ("rejected-tool-use"): the request was not done right, whatever the user typed next
    corrections: list = field(default_factory=list)


@dataclass
class Session:
    source: str  # claude | codex | codex-archive
    id: str
    path: str
    project: str | None = None  # the working directory
    started: str | None = None  # ISO timestamp of the first record
    turns: list = field(default_factory=list)
    version: str | None = None  # the tool's version that wrote it (Claude Code `version`, Codex `cli_version`)
    skills_listed: list = field(default_factory=list)  # skills the tool told the model it has (Codex)

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
    record_types: dict = field(default_factory=dict)  # source -> {record type: lines} read as no turn

    def summary(self) -> dict:
        kept = self.sessions
        return {"counts": self.counts, "skipped": self.skipped,
                "skip_reasons": {k: SKIP_REASONS[k] for k in self.skipped},
                "repaired_non_utf8_lines": self.repaired, "sessions": len(kept), "errors": self.errors,
                "skills_invoked": dict(Counter(s for x in kept for s in x.skills)),
                "skills_listed": dict(Counter(s for x in kept for s in x.skills_listed)),
                "versions": _per_source(kept, lambda x: [x.version or "unknown"]),
                "corrections": _per_source(kept, lambda x: [c for t in x.turns for c in t.corrections]),
                "record_types": self.record_types, "digest": self.digest}


def _per_source(sessions, values) -> dict:
    out: dict = {}
    for x in sessions:
        for v in values(x):
            out.setdefault(x.source, Counter())[v] += 1
    return {k: dict(sorted(c.items())) for k, c in sorted(out.items())}


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


def _field(value) -> str | None:
    """A transcript's metadata field (a session id, a cwd, a timestamp, a version) as text: a
    list, an object or a number where a string belongs is malformed, read as absent."""
    return value if isinstance(value, str) and value else None


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
def _correct_last_request(turns: list, signal: str) -> None:
    """Mark the latest request as corrected by `signal` (once per kind)."""
    last = next((t for t in reversed(turns) if t.role == "user"), None)
    if last is not None and signal not in last.corrections:
        last.corrections.append(signal)


def _tool_result_signal(rec: dict, content: list) -> str | None:
    """A user record carrying tool results: did the user reject the call, or stop the agent?"""
    texts = [_text_of(b.get("content")) if b.get("type") == "tool_result" else str(b.get("text") or "")
             for b in content if isinstance(b, dict)]
    if any(_INTERRUPTED.match(t) for t in texts):
        return "interrupted"
    if str(rec.get("toolUseResult") or "").startswith("User rejected") or any(_REJECTED.match(t) for t in texts):
        return "rejected-tool-use"
    return None


def read_claude(path: Path, skipped: Counter, repaired: Counter, subagents: bool = False,
                types: Counter | None = None) -> Session | None:
    session = Session("claude", path.stem, str(path))
    types = Counter() if types is None else types
    for line, rec in _lines(path, skipped, repaired, "claude"):
        if REPLAY_MARKER in line:
            skipped["skillos-replay"] += 1
            return None
        kind, ts = rec.get("type"), _field(rec.get("timestamp"))
        if kind not in ("user", "assistant") or not isinstance(rec.get("message"), dict):
            skipped["other-record"] += 1
            types[str(kind)] += 1
            continue
        if rec.get("isSidechain") and not subagents:  # a sub-agent's records inside the main file
            skipped["subagent-record"] += 1
            continue
        session.id = _field(rec.get("sessionId")) or session.id
        session.project = session.project or _field(rec.get("cwd"))
        session.started = session.started or ts
        version = rec.get("version")
        session.version = session.version or _field(version) or (
            str(version) if isinstance(version, (int, float)) and not isinstance(version, bool) else None)
        content = rec["message"].get("content")
        if kind == "user":
            if rec.get("isCompactSummary"):
                skipped["compaction-summary"] += 1
            elif rec.get("isMeta"):  # text Claude Code injected into the user's turn (caveats, reminders)
                skipped["system-wrapper"] += 1
            elif isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                   for b in content):
                # tool output fed back to the model, however deeply nested: not a request, but a
                # rejected call or an interruption there says the request went wrong
                signal = _tool_result_signal(rec, content)
                if signal:
                    _correct_last_request(session.turns, signal)
            elif _INTERRUPTED.match(_text_of(content)):
                skipped["interruption-marker"] += 1
                _correct_last_request(session.turns, "interrupted")
            else:
                _add_user(session, _text_of(content), ts, skipped, session.turns)
            continue
        blocks = content if isinstance(content, list) else [{"type": "text", "text": _text_of(content)}]
        uses = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        skills = [str((b.get("input") or {}).get("skill")) for b in uses
                  if b.get("name") == "Skill" and isinstance(b.get("input"), dict) and b["input"].get("skill")]
        if isinstance(rec.get("attributionSkill"), str) and rec["attributionSkill"]:  # newer Claude Code
            skills.append(rec["attributionSkill"])
        _add_assistant(session.turns, _text_of(blocks), [str(b.get("name")) for b in uses], skills, ts)
    return session


# -- Codex (CLI rollouts and the desktop archive) ---------------------------------------------------
def codex_line_problem(rec: dict) -> str | None:
    """Why a line is not Codex's RolloutLine (CODEX_LINE), or None. The desktop archive's lines
    (`{timestamp, payload}`, no `type`) and the oldest rollouts' flat records (no `payload`) are
    checked by the fields the harvest reads only."""
    enveloped = "type" in rec and "payload" in rec
    if enveloped and not isinstance(rec.get("timestamp"), str):
        return "no timestamp string"
    if "payload" in rec and not isinstance(rec["payload"], dict):
        return "payload is not an object"
    payload = rec["payload"] if "payload" in rec else rec
    item = rec.get("type") if enveloped else ("event_msg" if payload.get("type") in ("user_message", "agent_message")
                                              else "response_item")
    for name, kind in CODEX_LINE["payload_fields"].get((item, payload.get("type")), {}).items():
        if not isinstance(payload.get(name), kind):
            return f"{payload.get('type')}.{name} is not a {kind.__name__}"
    return None


def _codex_records(path: Path, source: str, skipped: Counter, repaired: Counter, types: Counter):
    """(line, record, payload, kind) of the lines that are RolloutLines; the rest counted."""
    for line, rec in _lines(path, skipped, repaired, source):
        if codex_line_problem(rec):
            skipped["schema-mismatch"] += 1
            continue
        if "payload" in rec and "type" in rec and rec["type"] not in CODEX_LINE["item_types"]:
            skipped["other-record"] += 1  # a RolloutItem newer than this reader
            types[str(rec["type"])] += 1
            continue
        payload = rec["payload"] if "payload" in rec else rec
        kind = rec["type"] if rec.get("type") == "session_meta" else payload.get("type") or rec.get("type")
        yield line, rec, payload, kind


def _note_listed_skills(session: Session, text) -> None:
    """Add the skills a Codex `## Skills` section in `text` lists to the session (each once)."""
    for block in _CODEX_SKILLS.findall(text if isinstance(text, str) else ""):
        for match in _CODEX_SKILL_LINE.finditer(block):
            if match.group(1) not in session.skills_listed:
                session.skills_listed.append(match.group(1))


def read_codex(path: Path, source: str, skipped: Counter, repaired: Counter,
               types: Counter | None = None) -> Session | None:
    """Codex logs each turn twice: the model's view (a `response_item` message) and the user's
    (an `event_msg`: `user_message`, `agent_message`). When a file has the events, they are the
    turns and every `response_item` message of that role is a copy or injected context; a file
    without them (older versions) is read from its messages. Structure, not equal text: the two
    copies differ once a log is sanitized or truncated."""
    session = Session(source, path.stem, str(path))
    types = Counter() if types is None else types
    records = []
    for line, rec, payload, kind in _codex_records(path, source, skipped, repaired, types):
        if REPLAY_MARKER in line:
            skipped["skillos-replay"] += 1
            return None
        records.append((rec, payload, kind))
    has_event = {"user": any(k == "user_message" for _, _, k in records),
                 "assistant": any(k == "agent_message" for _, _, k in records)}
    for rec, payload, kind in records:
        ts = _field(rec.get("timestamp")) or _field(payload.get("timestamp"))
        session.started = session.started or ts
        session.project = session.project or _field(payload.get("cwd"))
        if kind == "session_meta":
            session.id = _field(payload.get("id")) or session.id
            session.version = session.version or (str(payload["cli_version"]) if payload.get("cli_version") else None)
            instructions = payload.get("base_instructions") or payload.get("instructions")
            _note_listed_skills(session, instructions.get("text") if isinstance(instructions, dict) else instructions)
            continue
        role, text, tools = None, "", []
        if kind == "message" and payload.get("role") in ("user", "assistant", "developer"):
            text = _text_of(payload.get("content"))
            _note_listed_skills(session, text)
            if payload["role"] == "developer":
                skipped["system-wrapper"] += 1
                continue
            role = payload["role"]
            if has_event[role]:  # the event is the turn; this is its copy or injected context
                skipped["system-wrapper" if role == "user" and intent_skip(text) else "duplicate-codex-turn"] += 1
                continue
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
            types[str(kind)] += 1
            continue
        if tools:
            if session.turns and session.turns[-1].role == "assistant":
                session.turns[-1].tools += tools
            else:
                _add_assistant(session.turns, "", tools, (), ts)
        elif role == "user":
            _add_user(session, text, ts, skipped, session.turns)
        else:
            _add_assistant(session.turns, text, (), (), ts)
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
    types: dict[str, Counter] = {}
    files = list(_files(s, sources, skipped))
    for done, (source, path) in enumerate(files):
        if progress:
            progress(done, len(files))
        c = counts.setdefault(source, {"files": 0, "sessions": 0, "user_turns": 0, "assistant_turns": 0})
        c["files"] += 1
        try:
            kinds = types.setdefault(source, Counter())
            session = (read_claude(path, skipped, repaired, s.subagents, kinds) if source == "claude"
                       else read_codex(path, source, skipped, repaired, kinds))
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
    result = Harvest(sessions, counts, dict(sorted(skipped.items())), dict(repaired), errors=errors,
                     record_types={k: dict(v.most_common()) for k, v in sorted(types.items()) if v})
    if home is not None:
        result.digest = str(write_digest(result, Path(home)))
    return result


def write_digest(h: Harvest, home: Path) -> Path:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%S%fZ")
    path = home / "digests" / f"harvest-{stamp}.jsonl"
    lines = [json.dumps({"summary": {**h.summary(), "digest": str(path)}})]
    lines += [json.dumps(x.to_dict()) for x in h.sessions]
    write_atomic(path, "\n".join(lines) + "\n")
    return path


def read_digest(path: Path) -> list[Session]:
    """The sessions of a digest harvest wrote; a damaged line is a one-line error."""
    skips = safety.Skips()
    rows = [r for _, _, r in safety.jsonl_records(path, "harvest digest", skips)]
    if skips:
        raise SkillosError(f"{path}: damaged digest ({skips.places[0]}); run skillos sleep harvest again")
    try:
        return [Session.from_dict(r) for r in rows if "summary" not in r]
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise SkillosError(f"{path}: damaged digest ({type(exc).__name__}: {exc}); "
                           "run skillos sleep harvest again") from None
