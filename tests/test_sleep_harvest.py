"""skillos sleep harvest and mine on transcripts in the real Claude Code and Codex formats."""

import json

from conftest import run_cli
from sleep_fixtures import PLANTED_KEY, build_corrections, build_mixed
from skillos.config import SleepConfig
from skillos.training.textopt.sleep.harvest import harvest, read_digest
from skillos.training.textopt.sleep.mine import assign_splits, checks_from_feedback, mine


def _cfg(root, **kw):
    return SleepConfig(claude_dir=str(root / ".claude"), codex_dir=str(root / ".codex"), **kw)


def test_harvest_counts_each_source_and_says_what_it_skipped(tmp_path):
    expected = build_mixed(tmp_path)
    h = harvest(_cfg(tmp_path), home=tmp_path / "home")
    assert h.counts == expected["counts"]
    assert h.skipped == expected["skipped"]
    assert h.repaired == {"claude": 1}  # the non-UTF-8 line is kept, its byte replaced
    s1 = next(s for s in h.sessions if s.id == "s1")
    assert s1.skills == ["release-notes"] and s1.project == "/home/dev/work/app"
    assert [t.text for t in s1.turns if t.role == "user"][:2] == [
        "Write the release notes for v1.2 of the app", "No, that's wrong: add a `## Breaking changes` section"]
    assert "Bash" in s1.turns[1].tools and "deeper" not in json.dumps(s1.to_dict())  # tool output is no turn
    codex = next(s for s in h.sessions if s.source == "codex")
    assert [t.text for t in codex.turns if t.role == "user"] == ["Summarize the failing tests"] * 2  # a real repeat
    assert codex.id == "0199-aaaa" and codex.turns[1].tools == ["shell"]
    assert len(read_digest(h.digest)) == 4
    # sub-agents on request; filters
    assert harvest(_cfg(tmp_path, subagents=True)).counts["claude"]["sessions"] == 3
    assert [s.source for s in harvest(_cfg(tmp_path, sources=["codex"])).sessions] == ["codex", "codex-archive"]
    late = harvest(_cfg(tmp_path, since="2026-11-29"))
    assert sorted(s.id for s in late.sessions) == ["0199-aaaa", "s3"] and late.skipped["before-since"] == 2
    assert harvest(_cfg(tmp_path, project="elsewhere")).skipped["other-project"] == 4
    capped = harvest(_cfg(tmp_path, max_sessions=1))
    assert len(capped.sessions) == 1 and capped.skipped["over-max-sessions"] == 3


def test_no_planted_key_in_any_output_byte(tmp_path):
    build_mixed(tmp_path)
    home = tmp_path / "skillos-home"
    result = run_cli("sleep", "harvest", "--json", env={"HOME": str(tmp_path), "SKILLOS_HOME": str(home)})
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["counts"]["codex"]["sessions"] == 1 and summary["skipped"]["skillos-replay"] == 1
    assert summary["skip_reasons"]["subagent-session"].startswith("a Claude Code sub-agent")
    written = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name.startswith("harvest-") for p in written)
    assert b"[redacted]" in b"".join(p.read_bytes() for p in written)
    for blob in [result.stdout.encode(), result.stderr.encode(), *(p.read_bytes() for p in written)]:
        assert PLANTED_KEY.encode() not in blob and b"PLANTEDkey" not in blob


def test_mine_keeps_checkable_tasks_and_counts_the_rest(tmp_path):
    build_mixed(tmp_path)
    asks = build_corrections(tmp_path, n=6)
    h = harvest(_cfg(tmp_path))
    tasks, counts = mine(h.sessions)
    by_prompt = {t.prompt: t for t in tasks}
    notes = by_prompt["Write the release notes for v1.2 of the app"]
    assert notes.checks == [{"rule": "section", "value": "Breaking changes"}] and notes.why == "corrected"
    assert notes.sessions == ["s1"] and notes.skill == "release-notes"
    assert all(by_prompt[a].checks == [{"rule": "contains", "value": "TL;DR:"}] for a in asks)
    # the Codex repeat and "make it shorter" carry no rule: dropped and counted without a judge ...
    assert counts["dropped"] == {"no-check": 2} and counts["tasks"] == 7
    # ... and judged by a rubric with one
    judged, judged_counts = mine(h.sessions, judge=True)
    assert len(judged) == 9 and judged_counts["dropped"] == {}
    splits = assign_splits(tasks, 0.34, 0.2)
    ids = [{t.id for t in v} for v in splits.values()]
    assert sum(map(len, ids)) == len(tasks) and not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    again = assign_splits(list(reversed(tasks)), 0.34, 0.2)  # by content hash: order does not matter
    assert [{t.id for t in v} for v in again.values()] == ids


def test_feedback_rules():
    assert checks_from_feedback("keep it under 50 words and don't use `TODO`") == [
        {"rule": "not_contains", "value": "TODO"}, {"rule": "length", "max": 50, "unit": "words"}]


def test_a_skill_invoked_for_similar_requests_is_mined(tmp_path):
    from sleep_fixtures import Claude

    for i, ask in enumerate(["Write the release notes for v2.0 with a `## Fixes` section",
                             "Write the release notes for v2.1 with a `## Fixes` section", "Plot the latency chart"]):
        (Claude(f"k{i}").user(ask).assistant("On it.", tools=[("Skill", {"skill": "release-notes"})])
         .user("thanks, now the next thing").assistant("ok").write(tmp_path))
    tasks, counts = mine(harvest(_cfg(tmp_path)).sessions)
    assert [(t.why, t.skill, t.checks) for t in tasks] == [("skill", "release-notes",
                                                           [{"rule": "section", "value": "Fixes"}])] * 2
    assert counts["dropped"] == {"skill-used-once": 1}


def test_requests_are_counted_as_each_tool_logs_them(tmp_path):
    from sleep_fixtures import build_real_shapes

    logged = build_real_shapes(tmp_path)
    h = harvest(_cfg(tmp_path))
    summary = h.summary()
    by_source = {s.source: s for s in h.sessions}
    for source, asks in logged.items():
        assert [t.text for t in by_source[source].turns if t.role == "user"] == asks
        assert h.counts[source]["user_turns"] == len(asks)
    claude = by_source["claude"]
    # the rejected edit and the interruption mark the request they stopped, not a request of their own
    assert [t.corrections for t in claude.turns if t.role == "user"] == [
        ["rejected-tool-use", "interrupted"], [], ["interrupted"]]
    assert h.skipped["interruption-marker"] == 2 and claude.skills == ["refactor"] and claude.version == "2.1.39"
    codex = by_source["codex"]
    assert [t.text for t in codex.turns if t.role == "assistant"] == ["Done 0.", "Done 1.", "Done 2."]
    assert codex.skills_listed == ["release-notes", "skill-creator"] and codex.version == "0.104.0"
    assert h.skipped["schema-mismatch"] == 1
    assert summary["versions"] == {"claude": {"2.1.39": 1}, "codex": {"0.104.0": 1}}
    assert summary["corrections"] == {"claude": {"interrupted": 2, "rejected-tool-use": 1}}
    assert summary["record_types"]["claude"] == {"progress": 1, "system": 1, "queue-operation": 1}
    assert summary["record_types"]["codex"]["brand_new_item"] == 1


def test_an_interrupted_request_is_mined_as_corrected(tmp_path):
    from sleep_fixtures import Claude

    (Claude("i1").user("Write the changelog for 3.0").assistant("Writing.", tools=[("Write", {"file_path": "C.md"})])
     .user("[Request interrupted by user for tool use]")
     .user("Put it under a `## 3.0` heading").assistant("Done").write(tmp_path))
    tasks, _ = mine(harvest(_cfg(tmp_path)).sessions)
    assert [(t.prompt, t.why, t.checks) for t in tasks] == [
        ("Write the changelog for 3.0", "corrected", [{"rule": "section", "value": "3.0"}])]


def test_metadata_of_the_wrong_shape_is_read_as_absent_never_a_traceback(tmp_path):
    """A list sessionId, a list or numeric cwd, an object timestamp (Claude Code), a list session id
    or cwd (Codex): read as absent, the turns still read."""
    from collections import Counter

    from skillos.training.textopt.sleep import harvest as h

    claude = tmp_path / "c.jsonl"
    claude.write_text("".join(json.dumps(r) + "\n" for r in [
        {"type": "user", "sessionId": ["a", "b"], "cwd": ["/x"], "timestamp": {"t": 1}, "version": [1],
         "message": {"role": "user", "content": "please fix the failing build on main"}},
        {"type": "assistant", "sessionId": ["a"], "cwd": 5, "timestamp": "2026-01-01T00:00:00Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "fixed it"}]}}]))
    s = h.read_claude(claude, Counter(), Counter())
    assert (s.id, s.project, s.started, s.version) == ("c", None, "2026-01-01T00:00:00Z", None)
    assert len(s.turns) == 2 and json.dumps(s.to_dict())
    codex = tmp_path / "x.jsonl"
    codex.write_text("".join(json.dumps(r) + "\n" for r in [
        {"type": "session_meta", "timestamp": "2026-01-01T00:00:00Z", "payload": {"id": ["x"], "cwd": ["/y"]}},
        {"type": "event_msg", "timestamp": ["no"], "payload": {"type": "user_message", "message": "hello there"}},
        {"type": "event_msg", "timestamp": "2026-01-01T00:00:02Z", "payload": {"type": "agent_message", "message": "hi"}}]))
    s = h.read_codex(codex, "codex", Counter(), Counter())
    assert (s.id, s.project, s.started) == ("x", None, "2026-01-01T00:00:00Z") and json.dumps(s.to_dict())


def test_a_line_nested_200000_deep_is_a_counted_skip_with_its_words(tmp_path):
    """Every reason the bounded line reader skips a line for has its words in the harvest's summary
    (a too-deep line was a KeyError traceback)."""
    from skillos import safety
    from skillos.training.textopt.sleep.harvest import SKIP_REASONS

    assert set(safety.SKIP_WORDS) <= set(SKIP_REASONS)
    folder = tmp_path / "claude" / "projects" / "p"
    folder.mkdir(parents=True)
    depth = 200_000
    (folder / "s.jsonl").write_text('{"type": "user", "message": {"role": "user", "content": '
                                    + "[" * depth + "]" * depth + '}, "sessionId": "x"}\n')
    config = tmp_path / "c.yaml"
    config.write_text(f"sleep:\n  claude_dir: {tmp_path / 'claude'}\n  sources: [claude]\n")
    result = run_cli("sleep", "harvest", "--config", config, env={"SKILLOS_HOME": str(tmp_path / "home")})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-800:]
    assert "skipped 1: too-deep (nested deeper than 100 levels, skipped)" in result.stdout
