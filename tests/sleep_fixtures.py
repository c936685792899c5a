"""Transcript files in the real formats (see /shared/notes/sleep.md): Claude Code project
sessions with nested tool blocks and a sub-agent file, Codex CLI rollouts that log every turn
twice, the Codex desktop archive, a planted API key, a replay of skillos's own, a truncated last
line and a byte that is not UTF-8."""

import json
from pathlib import Path

from skillos.training.textopt.sleep.harvest import REPLAY_MARKER

PLANTED_KEY = "sk-proj-PLANTEDkey0123456789abcdefXYZ"
CWD = "/home/dev/work/app"


def _ts(i: int, day: int = 28) -> str:
    return f"2026-11-{day:02d}T09:{i // 60:02d}:{i % 60:02d}.000Z"


def _write(path: Path, records, tail: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"".join((r if isinstance(r, bytes) else json.dumps(r).encode()) + b"\n" for r in records)
    path.write_bytes(data + tail)
    return path


class Claude:
    """One Claude Code session: user/assistant records with the fields Claude Code writes."""

    def __init__(self, sid: str, cwd: str = CWD, day: int = 28):
        self.sid, self.cwd, self.day, self.records = sid, cwd, day, []

    def _base(self, kind, content, **extra):
        rec = {"type": kind, "sessionId": self.sid, "cwd": self.cwd, "gitBranch": "main", "version": "2.0.14",
               "uuid": f"{self.sid}-{len(self.records)}", "timestamp": _ts(len(self.records), self.day),
               "message": {"role": kind, "content": content}, **extra}
        self.records.append(rec)
        return self

    def user(self, text, **extra):
        return self._base("user", text, **extra)

    def assistant(self, text, tools=()):
        blocks = [{"type": "text", "text": text}]
        blocks += [{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": inp} for i, (name, inp) in
                   enumerate(tools)]
        return self._base("assistant", blocks)

    def tool_result(self, nested_text):
        return self._base("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [
            {"type": "text", "text": nested_text},
            {"type": "tool_result", "tool_use_id": "toolu_9", "content": [{"type": "text", "text": "deeper"}]}]}])

    def write(self, root: Path, tail: bytes = b"", rel: str | None = None) -> Path:
        slug = self.cwd.replace("/", "-")
        return _write(root / ".claude" / "projects" / slug / (rel or f"{self.sid}.jsonl"), self.records, tail)


def codex_rollout(root: Path, sid: str, exchanges, cwd: str = CWD, day: int = 29) -> Path:
    """A Codex CLI rollout: each user and assistant turn as a response_item and an event_msg."""
    recs = [{"timestamp": _ts(0, day), "type": "session_meta", "payload": {"id": sid, "cwd": cwd, "originator":
                                                                           "codex_cli_rs", "cli_version": "0.46.0"}},
            {"timestamp": _ts(1, day), "type": "turn_context", "payload": {"cwd": cwd, "model": "gpt-5-codex"}},
            {"timestamp": _ts(1, day), "type": "response_item", "payload": {
                "type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>\n  <cwd>x</cwd>\n</environment_context>"}]}}]
    for i, (ask, answer) in enumerate(exchanges):
        t = _ts(10 + 5 * i, day)
        recs += [{"timestamp": t, "type": "response_item", "payload": {
                     "type": "message", "role": "user", "content": [{"type": "input_text", "text": ask}]}},
                 {"timestamp": t, "type": "event_msg", "payload": {"type": "user_message", "message": ask,
                                                                   "kind": "plain"}},
                 {"timestamp": t, "type": "response_item", "payload": {"type": "reasoning", "summary": []}},
                 {"timestamp": t, "type": "response_item", "payload": {
                     "type": "function_call", "name": "shell", "arguments": "{\"command\": [\"ls\"]}", "call_id": "c1"}},
                 {"timestamp": t, "type": "response_item", "payload": {
                     "type": "function_call_output", "call_id": "c1", "output": "README.md"}},
                 {"timestamp": t, "type": "response_item", "payload": {
                     "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}},
                 {"timestamp": t, "type": "event_msg", "payload": {"type": "agent_message", "message": answer}},
                 {"timestamp": t, "type": "event_msg", "payload": {"type": "token_count", "info": None}}]
    return _write(root / ".codex" / "sessions" / "2026" / "11" / f"{day:02d}" /
                  f"rollout-2026-11-{day:02d}T09-00-00-{sid}.jsonl", recs)


def codex_archive(root: Path, name: str, exchanges, cwd: str = CWD, day: int = 27) -> Path:
    recs = []
    for i, (ask, answer) in enumerate(exchanges):
        t = _ts(5 * i, day)
        recs += [{"timestamp": t, "payload": {"type": "message", "role": "user", "content": [
                     {"type": "input_text", "text": ask}], "cwd": cwd}},
                 {"timestamp": t, "payload": {"type": "user_message", "message": ask, "cwd": cwd}},
                 {"timestamp": t, "payload": {"type": "exec_command_end", "exit_code": 0, "cwd": cwd}},
                 {"timestamp": t, "payload": {"type": "agent_message", "message": answer, "cwd": cwd}}]
    return _write(root / ".codex" / "archived_sessions" / f"{name}.jsonl", recs)


def build_mixed(root: Path) -> dict:
    """Every case the harvester must handle, with the counts it must report."""
    s1 = (Claude("s1").user("Write the release notes for v1.2 of the app")
          .assistant("Loading the release notes skill.", tools=[("Skill", {"skill": "release-notes"}),
                                                                  ("Bash", {"command": "git log"})])
          .tool_result("abc123 fix the parser")
          .assistant("## Changes\n- parser fix")
          .user("No, that's wrong: add a `## Breaking changes` section")
          .assistant("## Changes\n- parser fix\n## Breaking changes\n- none")
          .user("/clear")
          .user("<command-name>/model</command-name>\n<command-args></command-args>")
          .user("[Pasted text #1 +40 lines]")
          .user("Unless the user asks, do not mention this reminder.", isMeta=True)
          .user("This session is being continued from a previous conversation that ran out of context.",
                isCompactSummary=True)
          .user(f"Deploy it with my key {PLANTED_KEY} please")
          .assistant("I will not store that key."))
    s1.records.insert(3, {"type": "file-history-snapshot", "messageId": "m", "snapshot": {}})
    s1.records.insert(4, {**s1.records[0], "isSidechain": True, "message": {"role": "user", "content": "sidechain ask"}})
    s1.write(root, tail=b'{"type": "user", "message": {"role": "user", "content": "Write the rel')
    sub = Claude("s1").user("Search the code for the parser").assistant("Found it in parse.py")
    sub.write(root, rel="s1/subagents/agent-a1b2.jsonl")
    (Claude("s2").user(f"{REPLAY_MARKER} night 3 task 5f: Write the release notes")
     .assistant("## Changes").write(root))
    s3 = Claude("s3", day=29).user("Summarize the open issues").assistant("There are 3 open issues.")
    s3.records.append(json.dumps({"type": "user", "sessionId": "s3", "cwd": CWD, "timestamp": _ts(5, 29),
                                  "message": {"role": "user", "content": "Make it shorter, caf\u00e9"}}
                                 ).encode().replace("caf\\u00e9".encode(), b"caf\xe9"))
    s3.assistant("3 issues.").write(root)
    codex_rollout(root, "0199-aaaa", [("Summarize the failing tests", "2 tests fail in test_parse.py"),
                                      ("Summarize the failing tests", "Still 2: test_a, test_b")])
    codex_archive(root, "rollout-2026-11-27T09-00-00-0199-bbbb", [("Bump the version to 1.3", "Done: 1.3")])
    return {"counts": {"claude": {"files": 3, "sessions": 2, "user_turns": 5, "assistant_turns": 5},
                       "codex": {"files": 1, "sessions": 1, "user_turns": 2, "assistant_turns": 2},
                       "codex-archive": {"files": 1, "sessions": 1, "user_turns": 1, "assistant_turns": 1}},
            "skipped": {"subagent-session": 1, "skillos-replay": 1, "slash-command": 1, "system-wrapper": 3,
                        "pasted-stub": 1, "compaction-summary": 1, "unparseable-line": 1,
                        "duplicate-codex-turn": 5, "other-record": 8, "subagent-record": 1}}


REQUESTS = ["Draft the weekly status update for the payments team", "Write the changelog entry for the login fix",
            "Prepare the standup summary for Tuesday", "Write the incident summary for the outage on Friday",
            "Draft the release announcement for version 4", "Summarize the design review of the cache layer",
            "Write the handover note for the on-call rotation", "Draft the quarterly goals for the infra team",
            "Write the migration notes for the database upgrade", "Summarize the customer feedback from the survey",
            "Draft the postmortem for the deploy rollback", "Write the onboarding checklist for new hires",
            "Summarize the sprint retro action items", "Draft the RFC abstract for the new queue",
            "Write the README intro for the cli package", "Prepare the demo script for the sales call"]


def build_corrections(root: Path, token: str = "TL;DR:", n: int = len(REQUESTS)) -> list[str]:
    """`n` Claude Code sessions in which the user corrected the agent the same way: each one a
    mined task whose check is `contains token`."""
    for i, ask in enumerate(REQUESTS[:n]):
        (Claude(f"c{i:02d}", cwd="/home/dev/work/notes").user(ask).assistant("Here it is: ...")
         .user(f"No, you forgot the summary line: start with `{token}`")
         .assistant(f"{token} fixed").write(root))
    return REQUESTS[:n]


def build_real_shapes(root: Path) -> dict:
    """Sessions in the shapes Claude Code 2.1.x and Codex Desktop 0.104 write (sleep.md): progress
    and system records, interruption markers, a rejected tool call, a task notification, command
    wrappers, attributionSkill; Codex copies whose text differs from the event's (sanitized), a
    developer message listing skills, a RolloutItem newer than the reader and a malformed line.
    Returns what each tool logged as the user's requests."""
    c = Claude("r1")
    c.user("Refactor the parser into two modules")
    c.records.append({"type": "progress", "data": {"type": "hook_progress"}, "timestamp": _ts(1)})
    c.assistant("Splitting it.", tools=[("Edit", {"file_path": "parse.py"})])
    c._base("user", [{"type": "tool_result", "tool_use_id": "toolu_0", "is_error": True,
                      "content": "The user doesn't want to proceed with this tool use. The tool use was rejected."}],
            toolUseResult="User rejected tool use")
    c.user("[Request interrupted by user for tool use]")
    c.user("Keep the tokenizer where it is, only move the AST")
    c.assistant("Moved the AST.")
    c.records[-1]["attributionSkill"] = "refactor"
    c.user("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>")
    c.user("<command-name>/review</command-name>\n<command-message>review</command-message>")
    c.user("<local-command-stdout>ok</local-command-stdout>")
    c.user("Now write the tests")
    c.assistant("Writing tests.")
    c.user([{"type": "text", "text": "[Request interrupted by user]"}])
    c.records.append({"type": "system", "subtype": "compact_boundary", "timestamp": _ts(30)})
    c.records.append({"type": "queue-operation", "operation": "enqueue", "timestamp": _ts(31)})
    for rec in c.records:
        rec["version"] = "2.1.39"
    c.write(root)

    sid, cwd, day = "019a-desk", CWD, 26
    skills_text = ("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\n## Skills\nThese skills are discovered at "
                   "startup from multiple local sources.\n- release-notes: Write release notes. (file: /h/.codex/"
                   "skills/release-notes/SKILL.md)\n- skill-creator: Create skills. (file: /h/.codex/skills/.system/"
                   "skill-creator/SKILL.md)\n</INSTRUCTIONS>")
    recs = [{"timestamp": _ts(0, day), "type": "session_meta", "payload": {
                "id": sid, "cwd": cwd, "originator": "Codex Desktop", "cli_version": "0.104.0",
                "base_instructions": {"text": "You are Codex."}, "git": {"branch": "main"}}},
            {"timestamp": _ts(1, day), "type": "response_item", "payload": {
                "type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>"}]}},
            {"timestamp": _ts(1, day), "type": "response_item", "payload": {
                "type": "message", "role": "user", "content": [{"type": "input_text", "text": skills_text}]}},
            {"timestamp": _ts(1, day), "type": "turn_context", "payload": {"turn_id": "t0", "cwd": cwd, "effort": "high"}}]
    asks = ["Fix the flaky login test", "Bump the version to 2.0", "Fix the flaky login test"]
    for i, ask in enumerate(asks):
        t = _ts(10 + 5 * i, day)
        recs += [{"timestamp": t, "type": "response_item", "payload": {  # sanitized: not equal to the event
                     "type": "message", "role": "user", "content": [{"type": "input_text", "text": f"[sanitized {i}]"}]}},
                 {"timestamp": t, "type": "event_msg", "payload": {"type": "user_message", "message": ask,
                                                                   "images": [], "local_images": []}},
                 {"timestamp": t, "type": "response_item", "payload": {
                     "type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"done {i}"}]}},
                 {"timestamp": t, "type": "event_msg", "payload": {"type": "agent_message", "message": f"Done {i}."}}]
    recs += [{"timestamp": _ts(40, day), "type": "world_state", "payload": {"snapshot": {}}},
             {"timestamp": _ts(41, day), "type": "brand_new_item", "payload": {"x": 1}},
             {"timestamp": _ts(42, day), "type": "event_msg", "payload": {"type": "user_message", "message": 42}}]
    _write(root / ".codex" / "sessions" / "2026" / "11" / f"{day:02d}" / f"rollout-2026-11-{day:02d}T09-00-00-{sid}.jsonl",
           recs)
    return {"claude": ["Refactor the parser into two modules", "Keep the tokenizer where it is, only move the AST",
                       "Now write the tests"], "codex": asks}
