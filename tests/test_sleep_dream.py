"""Dream (perturbed variants of mined train tasks, SkillOpt's dream_factor) and the LLM miner
(requests the rules could not check, kept only with checks a model stated and the rules accept),
both under a night's hard budget."""

import json

import pytest

from llm_server import ScriptedLLM
from sleep_fixtures import Claude
from test_sleep_night import TOKEN, follows_the_skill, world  # noqa: F401  (world is a fixture)
import skillos
from skillos.errors import SkillosError
from skillos.training.textopt.sleep.dream import FRAMINGS, dream, llm_mine
from skillos.training.textopt.sleep.mine import Task, task_id
from skillos.training.textopt.sleep.replay import Budget, Caller

CHECKS = [{"rule": "contains", "value": TOKEN}]


def task(prompt, split="train"):
    return Task(task_id(prompt), prompt, list(CHECKS), "corrected", ["s1"], None, split)


def test_rules_dream_variants_that_keep_the_checks_and_never_equal_a_real_task():
    a, b = task("Write the deploy note"), task("Summarize the incident")
    real = task(FRAMINGS[0].format(p="Write the deploy note"), split="validation")  # a user really asked this
    variants, counts = dream([a, b], 2, {a.id, b.id, real.id}, None, None, 0)
    assert [v.prompt for v in variants] == ["Write the deploy note\n\nThanks.",  # "Please ..." is a real task
                                            "Please Summarize the incident", "Summarize the incident\n\nThanks."]
    assert all(v.checks == CHECKS and v.split == "train" and v.why == "dream" for v in variants)
    assert [v.origin for v in variants] == [a.id, b.id, b.id] and counts["collides_with_a_real_task"] == 1
    assert (counts["variants"], counts["from_tasks"], counts["by"]) == (3, 2, "rules")
    assert dream([a], 0, {a.id}, None, None, 0)[0] == []


def test_a_model_dreams_under_the_budget_and_a_failed_call_falls_back_to_rules(monkeypatch):
    from skillos.config import BackendConfig
    from skillos.evals.backends.chat import make_chat

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    tasks = [task("Write the deploy note"), task("Summarize the incident")]
    with ScriptedLLM(lambda m: "1. Draft the deploy note, please\n2. Could you write up the deploy note?") as server:
        chat = make_chat(BackendConfig(backend="openai", model="m", base_url=server.openai_url, max_retries=0))
        caller = Caller(Budget(1, 100_000, 5.0), 3)  # room for one call: the second task is not dreamed
        variants, counts = dream(tasks, 2, {t.id for t in tasks}, caller, chat, 64)
        assert [v.prompt for v in variants] == ["Draft the deploy note, please", "Could you write up the deploy note?"]
        assert counts["stopped_because"].startswith("calls cap reached") and caller.budget.calls == 1
        server.outage = True
        variants, counts = dream(tasks[:1], 2, {tasks[0].id}, Caller(Budget(5, 100_000, 5.0), 3), chat, 64)
    assert counts["model_failed"] == 1 and [v.prompt for v in variants] == ["Please Write the deploy note",
                                                                           "Write the deploy note\n\nThanks."]


def test_the_llm_miner_keeps_only_requests_with_checks_the_rules_accept(monkeypatch):
    from skillos.config import BackendConfig
    from skillos.evals.backends.chat import make_chat

    replies = {"deploy": '{"checks": [{"rule": "contains", "value": "TL;DR:"}]}',
               "poem": '{"checks": []}', "mood": "I think it is fine.",
               "judged": '{"checks": [{"rule": "rubric", "rubric": "It is friendly."}]}',
               "regex": '```json\n{"checks": [{"rule": "regex", "value": "("}]}\n```'}

    def policy(messages):
        text = messages[-1]["content"]
        return next(r for k, r in replies.items() if k in text)

    unchecked = [{"prompt": f"Write the {k} thing", "why": "corrected", "session": f"s-{k}", "skill": None,
                  "feedback": "not what I wanted"} for k in replies]
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with ScriptedLLM(policy) as server:
        chat = make_chat(BackendConfig(backend="openai", model="m", base_url=server.openai_url, max_retries=0))
        tasks, counts = llm_mine(unchecked, set(), False, Caller(Budget(10, 100_000, 5.0), 3), chat, 64)
        assert "then said: 'not what I wanted'" in server.calls[0]["body"]["messages"][0]["content"]
        judged, _ = llm_mine(unchecked[3:4], set(), True, Caller(Budget(10, 100_000, 5.0), 3), chat, 64)
        capped, capped_counts = llm_mine(unchecked, set(), False, Caller(Budget(2, 100_000, 5.0), 3), chat, 64)
    assert [(t.prompt, t.checks, t.why, t.sessions) for t in tasks] == [
        ("Write the deploy thing", [{"rule": "contains", "value": "TL;DR:"}], "llm-mined", ["s-deploy"])]
    # an empty list, no JSON, a rubric with no judge to read it, a regex that does not compile
    assert (counts["uncheckable"], counts["invalid_reply"], counts["asked"]) == (3, 1, 5)
    assert judged[0].checks == [{"rule": "rubric", "rubric": "It is friendly."}]  # with a judge, a rubric stays
    assert capped_counts["asked"] == 2 and capped_counts["stopped_because"].startswith("calls cap reached")


def test_a_night_replays_dreamed_variants_beside_its_train_tasks(world):  # noqa: F811
    make, skill, home = world
    with ScriptedLLM(follows_the_skill) as server:
        report = skillos.sleep(make(server, dream_factor=2), echo=lambda _: None)
    assert report["status"] == "finished" and report["tasks"] == {"train": 8, "validation": 4, "test": 5}
    assert report["dreamed"] == 16 and report["source"]["dream"]["by"] == "rules"
    night = home / "nights" / report["night"]
    rows = [json.loads(x) for x in (night / "tasks.jsonl").read_text().splitlines()]
    dreamed = [r for r in rows if r["why"] == "dream"]
    real = {r["id"]: r for r in rows if r["why"] != "dream"}
    assert len(dreamed) == 16 and all(real[d["origin"]]["split"] == "train" for d in dreamed)
    assert all(d["checks"] == real[d["origin"]]["checks"] for d in dreamed)
    replayed = [json.loads(x) for x in (night / "outcomes.jsonl").read_text().splitlines()]
    assert sum(r["arm"] == "train-0" for r in replayed) == 8 + 16  # the variants are replayed too
    first = report["candidates"][0]
    assert first["verdict"] == "accept" and len(first["from_tasks"]) == 24
    assert report["budget"]["calls"] == 4 + 4 + 24 + 4 + 24 + 5 + 5


def test_the_llm_miner_adds_tasks_to_a_night_and_needs_a_model_optimizer(world, tmp_path):  # noqa: F811
    make, skill, home = world
    (Claude("vague", cwd="/home/dev/work/notes").user("Write the quarterly mood report").assistant("Here.")
     .user("No, that is not what I wanted at all").write(tmp_path))  # no quoted text: the rules find no check

    def policy(messages):
        if "If it cannot be checked" in messages[-1]["content"]:
            return '{"checks": [{"rule": "contains", "value": "Mood:"}]}'
        return follows_the_skill(messages)

    with ScriptedLLM(policy) as server:
        optimizer = {"backend": "openai", "model": "Qwen3-8B", "base_url": server.openai_url,
                     "api_key_env": "SLEEP_TEST_KEY", "max_retries": 0, "max_tokens": 64}
        report = skillos.sleep(make(server, optimizer=optimizer, llm_miner=True, steps=1), echo=lambda _: None)
        with pytest.raises(SkillosError, match="sleep.llm_miner: the LLM miner asks sleep.optimizer"):
            skillos.sleep(make(server, llm_miner=True), echo=lambda _: None)
    miner = report["source"]["llm_miner"]
    assert (miner["requests"], miner["asked"], miner["tasks"]) == (1, 1, 1)
    rows = [json.loads(x) for x in (home / "nights" / report["night"] / "tasks.jsonl").read_text().splitlines()]
    [mined] = [r for r in rows if r["why"] == "llm-mined"]
    assert mined["prompt"] == "Write the quarterly mood report" and mined["checks"] == [
        {"rule": "contains", "value": "Mood:"}]
    assert sum(report["tasks"].values()) == 18 and report["budget"]["calls"] >= 1


def test_the_dry_run_plan_counts_dreamed_replays_in_its_worst_case(world):  # noqa: F811
    from skillos.training.textopt.sleep.night import plan_night

    make, skill, home = world
    with ScriptedLLM(follows_the_skill) as server:
        plain = plan_night(make(server, steps=2))
        dreamy = plan_night(make(server, steps=2, dream_factor=2))
        with pytest.raises(SkillosError, match="sleep.dream_factor: must be between 0 and 6, got 9"):
            make(server, dream_factor=9)  # refused when the config loads, not when a night starts
        assert not server.calls  # planning and refusing spend nothing
    # 8 train tasks, 2 variants each, replayed at each of 2 steps
    assert dreamy["worst_case"]["calls"] - plain["worst_case"]["calls"] == 2 * 16
