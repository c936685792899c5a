"""Model backends against a real local HTTP server, through the real openai and anthropic SDKs:
replies, retries on 429/5xx, timeouts and outages (unmeasured, never a failure), and the LLM
executor's prompt, parsing, reformat retry and coercion count."""

import json

import pytest
import yaml

from conftest import ROOT, run_cli
from llm_server import ScriptedLLM
from skillos.config import BackendConfig, CuratorConfig
from skillos.errors import SkillosError
from skillos.evals.backends.chat import BackendError, make_chat
from skillos.evals.envs.household.llm import LLMExecutor, parse_action
from skillos.repo import Skill


@pytest.fixture
def llm(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with ScriptedLLM(lambda messages: "<action>go to desk 1</action>") as server:
        yield server


def backend(server, kind="openai", **kw):
    url = server.openai_url if kind == "openai" else server.anthropic_url
    return CuratorConfig(backend=kind, model="Qwen3-8B", base_url=url, max_retries=2,
                         timeout_s=0.5, **kw)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_chat_call_goes_over_http_through_the_sdk(llm, kind):
    result = make_chat(backend(llm, kind, temperature=0.0, max_tokens=64)).chat(
        [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}])
    assert result.text == "<action>go to desk 1</action>"
    assert (result.prompt_tokens, result.completion_tokens) == (11, 7)
    body = llm.calls[-1]["body"]
    assert body["model"] == "Qwen3-8B" and body["temperature"] == 0.0
    if kind == "anthropic":
        assert llm.calls[-1]["path"] == "/v1/messages" and body["system"] == "be brief"
    else:
        assert llm.calls[-1]["path"] == "/v1/chat/completions" and body["max_tokens"] == 64


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_429_and_500_are_retried_by_the_sdk(llm, kind):
    llm.failures.extend([429, 500])
    result = make_chat(backend(llm, kind)).chat([{"role": "user", "content": "hi"}])
    assert result.text and len(llm.calls) == 3


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_persistent_errors_and_timeouts_raise_backend_error(llm, kind):
    llm.failures.extend([503, 503, 503])
    with pytest.raises(BackendError):
        make_chat(backend(llm, kind)).chat([{"role": "user", "content": "hi"}])
    llm.failures.extend(["stall"])
    llm.stall_s = 2.0
    stalls = BackendConfig(backend=kind, model="m", base_url=backend(llm, kind).base_url,
                           timeout_s=0.3, max_retries=0)
    with pytest.raises(BackendError, match="(?i)timeout|timed out"):
        make_chat(stalls).chat([{"role": "user", "content": "hi"}])


def test_keys_come_only_from_the_environment(llm, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(SkillosError, match=r"\$OPENAI_API_KEY"):
        make_chat(backend(llm))
    monkeypatch.setenv("MY_KEY", "k")
    assert make_chat(backend(llm, api_key_env="MY_KEY")).chat([{"role": "user", "content": "x"}])


ADMISSIBLE = ["go to desk 1", "take mug 1 from desk 1", "look"]


@pytest.mark.parametrize("reply, action", [
    ("<action>take mug 1 from desk 1</action>", "take mug 1 from desk 1"),
    ("Thinking... <action> Take Mug 1 From Desk 1 </action>", "take mug 1 from desk 1"),
    ("I should go to desk 1 now.", "go to desk 1"),
    ("<action>fly away</action>", None),
])
def test_parse_action(reply, action):
    assert parse_action(reply, ADMISSIBLE) == action


def test_the_executor_prompt_has_the_papers_shape(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedLLM(lambda m: "<action>look</action>") as server:
        executor = LLMExecutor(backend(server, history_length=2))
        episode = executor.new_episode("put a mug in the desk", [Skill("find-mugs", "Mugs are on desks.")])
        for obs in ("You are in a room.", "You see a desk.", "Nothing happens.", "A mug."):
            episode.act(obs, ADMISSIBLE)
        prompt = server.calls[-1]["body"]["messages"][-1]["content"]
    assert prompt.startswith("Your task is to: put a mug in the desk")
    assert "Past relevant skills:\n## find-mugs\nMugs are on desks." in prompt
    assert "Step 4." in prompt and "Your last 2 actions and what followed:" in prompt
    assert "You see a desk." not in prompt.split("Current observation:")[0]  # only the last 2
    assert prompt.rstrip().endswith("Answer with one admissible action inside <action></action>.")
    assert "Admissible actions:\ngo to desk 1\ntake mug 1 from desk 1\nlook" in prompt


def test_one_reformat_retry_then_a_counted_coercion(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    replies = iter(["I am not sure.", "<action>look</action>", "hmm", "still no"])
    with ScriptedLLM(lambda m: next(replies)) as server:
        episode = LLMExecutor(backend(server)).new_episode("t", [])
        assert episode.act("obs", ADMISSIBLE) == "look"  # fixed by the retry
        retry = server.calls[1]["body"]["messages"]
        assert "That is not one of the admissible actions" in retry[-1]["content"]
        assert episode.act("obs", ADMISSIBLE) == "still no"  # not admissible: runner coerces
        assert episode.reformats == 2 and len(server.calls) == 4


@pytest.mark.alfworld
def test_eval_with_an_openai_executor_pointed_at_the_server(tmp_path, game_cache):
    data = yaml.safe_load((ROOT / "evals" / "configs" / "quickstart.yaml").read_text())
    data.pop("divergences")
    data["eval"]["workers"] = 1
    with ScriptedLLM() as server:
        data["executor"] = {"backend": "openai", "model": "Qwen/Qwen3-8B", "base_url": server.openai_url,
                            "reasoning_effort": "medium", "max_tokens": 4096, "history_length": 3,
                            "temperature": 0.6, "top_p": 0.95, "top_k": 20,  # the model card's (gate 1)
                            "timeout_s": 5.0}
        config = tmp_path / "llm.yaml"
        config.write_text(yaml.safe_dump(data))
        result = run_cli("eval", config, "--n-games", 4, "--n-train-games", 4, "--json",
                         "--out", tmp_path / "run", env={"OPENAI_API_KEY": "test-key"})
        calls = len(server.calls)
        body = server.calls[-1]["body"]
    assert result.returncode == 0, result.stderr[-2000:]
    assert (body["temperature"], body["top_p"], body["top_k"], body["reasoning_effort"]) == (0.6, 0.95, 20, "medium")
    report = json.loads(result.stdout)
    for arm in report["arms"].values():
        assert arm["attempted"] == 4 and arm["measured"] == 4 and arm["actions"] > 0
    assert calls >= sum(a["actions"] for a in report["arms"].values())


@pytest.mark.alfworld
def test_an_outage_mid_run_is_unmeasured_and_aborts_the_arm(tmp_path, game_cache, monkeypatch):
    """The reference's worst result: an API outage scored as failures. Here the games in the
    outage window are unmeasured, none is a failure, and the arm aborts past its error budget."""
    from dataclasses import replace

    from skillos.evals.envs.alfworld.env import AlfworldEnv
    from skillos.evals.envs.alfworld.games import make_games
    from skillos.evals.runner import ArmAborted, run_arm

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    base = make_games("valid_unseen", 4, 0)
    games = [replace(g, id=f"{g.id}#{i}") for i in range(6) for g in base]  # 24 plays
    rows = []
    with ScriptedLLM() as server:
        executor = LLMExecutor(BackendConfig(backend="openai", model="m", base_url=server.openai_url,
                                             max_retries=0, history_length=3))

        def on_game(row):
            rows.append(row)
            server.outage = len(rows) >= 5  # the endpoint goes down after game 5

        with pytest.raises(ArmAborted, match=r"15 of 20 games unmeasured"):
            run_arm("llm", games, env=AlfworldEnv(), executor=executor, repo=None, max_steps=30,
                    top_k=5, retrieval_mode="bm25", concurrency=1, wave_size=1, out=tmp_path / "games.jsonl", on_game=on_game, max_error_rate=0.02)
    assert len(rows) == 20
    assert all(r["success"] is not None for r in rows[:5])
    lost = rows[5:]
    assert all(r["success"] is None and r["unmeasured"] for r in lost)
    assert all("InternalServerError" in r["unmeasured_reason"] or "503" in r["unmeasured_reason"]
               for r in lost)
    written = [json.loads(line) for line in (tmp_path / "games.jsonl").read_text().splitlines()]
    assert [r["game_id"] for r in written] == [r["game_id"] for r in rows]
    assert not any(r["success"] is False for r in written[5:])  # not one scored as a failure


def _trajectory(won=True):
    from skillos.evals.trajectory import Step, Trajectory

    return Trajectory("g1", "put a mug in the coffeemachine", "pick_and_place_simple",
                      steps=[Step("go to desk 1", "You see a mug 1.")], won=won, retrieved=[])


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_llm_curator_edits_the_repo_through_the_shared_tools(kind, monkeypatch):
    from skillos.evals.backends.llm_curator import LLMCurator
    from skillos.repo import SkillRepo

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    replies = iter([
        {"tool_calls": [{"name": "new_skill_insert", "arguments": {
            "skill_name": "find-mugs", "content": "Mugs are on desks\nGo to the desk first."}},
            {"name": "skill_delete", "arguments": {"skill_name": "missing"}}]},
        {"tool_calls": [{"name": "curate_and_advance", "arguments": {"operations": [
            {"op": "update", "skill_name": "find-mugs", "new_content": "Mugs: desks, then shelves\nx"}]}}]},
    ])
    with ScriptedLLM(lambda m: next(replies)) as server:
        curator = LLMCurator(backend(server, kind))
        repo = SkillRepo(None)
        first = curator.curate(_trajectory(), repo)
        assert [a.ok for a in first] == [True, False]
        assert repo.get("find-mugs").description == "Mugs are on desks"
        curator.curate(_trajectory(False), repo)
        assert repo.get("find-mugs").description == "Mugs: desks, then shelves"
        sent = server.calls[0]["body"]
    tools = sent["tools"]
    names = [t["function"]["name"] if kind == "openai" else t["name"] for t in tools]
    assert names == ["new_skill_insert", "skill_update", "skill_delete"]
    prompt = json.dumps(sent["messages"])
    assert "Result: SUCCESS" in prompt and "Current skills:" in prompt


def test_a_failed_curator_call_edits_nothing_and_is_counted(llm):
    from skillos.evals.backends.llm_curator import LLMCurator
    from skillos.repo import SkillRepo

    llm.failures.extend([503, 503, 503])
    curator = LLMCurator(backend(llm))
    repo = SkillRepo(None)
    assert curator.curate(_trajectory(), repo) == [] and len(repo) == 0
    assert curator.unmeasured_calls == 1


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_curate_and_advance_curator_converses_as_in_training(kind, monkeypatch):
    """The trained surface: each later game arrives in the tool response to the previous call
    (one response per call, ids matched, as the APIs require); a new conversation every horizon."""
    from skillos.evals.backends.llm_curator import LLMCurator
    from skillos.repo import SkillRepo

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    insert = {"name": "curate_and_advance", "arguments": {"operations": [
        {"op": "insert", "skill_name": "find-mugs", "content": "Mugs are on desks\nGo to the desk."}]}}
    replies = iter([{"tool_calls": [insert, {"name": "curate_and_advance", "arguments": {"operations": []}}]},
                    {"content": "nothing to change"}, {"tool_calls": [insert]}])
    with ScriptedLLM(lambda m: next(replies)) as server:
        curator = LLMCurator(backend(server, kind, tools="curate_and_advance"), horizon=3)
        repo = SkillRepo(None)
        assert [a.ok for a in curator.curate(_trajectory(), repo)] == [True]
        curator.curate(_trajectory(False), repo)  # a 400 here would be a BackendError: unmeasured
        curator.curate(_trajectory(), repo)
        assert curator.unmeasured_calls == 0 and len(server.calls) == 3
        second, third = (call["body"]["messages"] for call in server.calls[1:])
    assert [t["function"]["name"] if kind == "openai" else t["name"]
            for t in server.calls[0]["body"]["tools"]] == ["curate_and_advance"]
    text = json.dumps(second)
    assert "Operations:\\n- insert find-mugs: ok" in text and "Result: FAILURE" in text
    if kind == "openai":
        assert [m["role"] for m in second] == ["system", "user", "assistant", "tool", "tool"]
    else:
        assert [m["role"] for m in second] == ["user", "assistant", "user"]
        assert [b["type"] for b in second[-1]["content"]] == ["tool_result", "tool_result"]
    assert third[-1]["role"] == "user" and "Result: SUCCESS" in json.dumps(third[-1])  # after a text reply

@pytest.mark.parametrize("reply, verdict", [
    ('{"verdict": "VALID", "reason": "specific"}', True),
    ('Thinking first. {"verdict": "invalid", "reason": "vague"}', False),
    ("VALID", None),  # not the JSON asked for: unmeasured, not INVALID
    ('{"verdict": "maybe"}', None),
])
def test_judge_verdicts_and_unparseable_is_unmeasured(reply, verdict, monkeypatch):
    from skillos.config import JudgeConfig
    from skillos.evals.judge import make_judge

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert make_judge(JudgeConfig()) is None
    with ScriptedLLM(lambda m: reply) as server:
        judge = make_judge(JudgeConfig(backend="openai", model="Qwen3-32B", base_url=server.openai_url))
        assert judge.judge("## find-mugs\nMugs are on desks.") is verdict
        server.outage = True
        assert make_judge(JudgeConfig(backend="openai", model="m", base_url=server.openai_url,
                                      max_retries=0)).judge("x") is None
