"""The cost gate (evals/prices.py, gates/approval.py api-cost): a launch whose executor is a
paid API is costed before it runs (calls x tokens x price, the price's source and date); over
compute.max_cost_usd, or at an unknown price, it waits for an approved plan; the run records the
tokens its calls used and its report shows estimate vs measured. Against a real local
OpenAI-compatible server through the real SDK."""

import json

import pytest
import yaml

from conftest import ROOT, run_cli
from llm_server import ScriptedLLM
from skillos.evals import prices
from skillos.config.loading import with_sets
from skillos.config.schema import Config
from skillos.errors import ConfigError


def test_the_estimate_is_calls_times_tokens_times_the_price_and_unknown_is_never_zero():
    cfg = with_sets(Config(), ["executor.backend=openai", "executor.model=gpt-4o-mini-2024-07-18",
                               "env.n_games=10", "env.n_train_games=0", "eval.arms=[no_memory,shuffled]",
                               "env.max_steps=5", "executor.max_tokens=100"])
    est = prices.estimate(cfg)
    (role,) = est["roles"]
    assert role["calls"] == 2 * 10 * 5 and role["usd_per_mtok"] == [0.15, 0.60]
    assert "gpt-4o-mini as listed by" in role["price_source"] and "2026" in role["price_source"]
    assert est["usd"] == pytest.approx(100 * (2000 * 0.15 + 100 * 0.60) / 1e6) and est["within_budget"]
    unknown = prices.estimate(with_sets(cfg, ["executor.model=some-new-model"]))
    assert unknown["usd"] is None and unknown["within_budget"] is None and "not in the price table" in unknown["reason"]
    stated = prices.estimate(with_sets(cfg, ["executor.model=some-new-model", "executor.usd_per_mtok=[1, 2]"]))
    assert stated["usd"] == pytest.approx(100 * (2000 * 1 + 100 * 2) / 1e6)
    # a server of your own serving a model no vendor prices bills nothing per token; a vendor's model does
    local = with_sets(cfg, ["executor.model=Qwen3-8B", "executor.base_url=http://127.0.0.1:8000/v1"])
    assert not prices.estimate(local)["paid"]
    assert prices.estimate(with_sets(local, ["executor.model=claude-sonnet-4-20250514",
                                             "executor.backend=anthropic"]))["roles"][0]["usd_per_mtok"] == [3.0, 15.0]
    assert not prices.estimate(Config())["paid"]  # the heuristic executor
    # admissible decoding on a paid endpoint reads the prompt once per admissible action: not known before play
    scored = prices.estimate(with_sets(cfg, ["executor.model=some-new-model", "executor.usd_per_mtok=[1, 2]",
                                             "executor.base_url=https://api.example.com/v1",
                                             "executor.decoding=admissible"]))
    assert scored["roles"][0]["calls"] == 100 and scored["usd"] is None and scored["within_budget"] is None
    assert "admissible reads the prompt once per admissible action" in scored["reason"]
    with pytest.raises(ConfigError, match=r"executor.usd_per_mtok: \[input, output\]"):
        with_sets(cfg, ["executor.usd_per_mtok=[1]"])


@pytest.mark.alfworld
def test_a_paid_executor_over_budget_waits_for_an_approved_plan_and_its_run_records_its_tokens(
        tmp_path, game_cache, skillos_home):
    from skillos.config.loading import load
    from skillos.ledger import Ledger

    data = yaml.safe_load((ROOT / "evals" / "configs" / "quickstart.yaml").read_text())
    data.pop("divergences")
    data["eval"]["workers"] = 1
    env = {"OPENAI_API_KEY": "test-key"}
    with ScriptedLLM() as server:
        data["executor"] = {"backend": "openai", "model": "gpt-4o", "base_url": server.openai_url,
                            "history_length": 3, "timeout_s": 5.0, "max_tokens": 64}
        data["divergences"] = {key: {"value": None, "reason": "a paid API executor, to cost it"} for key in (
            "executor.model", "executor.temperature", "executor.top_p", "executor.top_k", "executor.reasoning_effort")}
        data["divergences"]["executor.model"]["value"] = "gpt-4o"
        data.setdefault("compute", {})["max_cost_usd"] = 0.01
        config = tmp_path / "paid.yaml"
        config.write_text(yaml.safe_dump(data))
        sets = ["env.n_games=2", "env.n_train_games=2"]
        args = [a for s in sets for a in ("--set", s)]
        checked = run_cli("gate", "check", config, *args, "--json", env=env)
        rows = {r["check"]: r for r in json.loads(checked.stdout)["results"]}
        assert rows["api-cost"]["status"] == "WARN" and "over compute.max_cost_usd $0.01" in rows["api-cost"]["detail"]
        plan = run_cli("plan", config, *args, env=env)
        assert plan.returncode == 0, plan.stderr
        assert "paid API cost $" in plan.stdout and "executor openai:gpt-4o" in plan.stdout
        refused = run_cli("eval", config, *args, "--out", tmp_path / "refused", env=env)
        assert refused.returncode == 1 and "1 check(s) failed (api-cost)" in refused.stderr, refused.stderr[-1500:]
        assert server.calls == []  # refused before a single paid call
        with Ledger(skillos_home / "ledger.db") as ledger:  # what `skillos approve` records, at a terminal
            ledger.add_approval(load(config, sets=sets).plan_hash(), "0" * 64, {"plan": 3}, "person")
        ran = run_cli("eval", config, *args, "--json", "--out", tmp_path / "run", env=env)
        calls = len(server.calls)
    assert ran.returncode == 0, ran.stderr[-2000:]
    cost = json.loads(ran.stdout)["api_cost"]
    assert cost["estimate"]["usd"] > 0.01 and cost["estimate"]["roles"][0]["model"] == "gpt-4o"
    measured = [m["tokens"]["openai:gpt-4o"] for m in cost["measured"].values()]
    gates = cost["gates_dry_run"]["tokens"]["openai:gpt-4o"]  # the launch gates' dry run plays games too
    assert sum(m["calls"] for m in measured) + gates["calls"] == calls  # every call the server answered, counted
    assert all(m["prompt_tokens"] == 11 * m["calls"] and m["completion_tokens"] == 7 * m["calls"] for m in measured)
    arm = next(iter(cost["measured"].values()))
    assert arm["usd"] == pytest.approx(arm["tokens"]["openai:gpt-4o"]["calls"] * (11 * 2.5 + 7 * 10.0) / 1e6)
    with Ledger(skillos_home / "ledger.db") as ledger:
        recorded = [json.loads(r["tokens_json"]) for r in ledger.rows("runs") if r["tokens_json"]]
    assert len(recorded) == 2 and all(r["tokens"]["openai:gpt-4o"]["calls"] > 0 for r in recorded)


def test_a_metered_backend_copies_and_pickles_like_the_backend():
    """make_chat's counting wrapper keeps the backend's attributes, and copies and pickles (a spawn
    or Ray worker handed a built backend) instead of recursing."""
    import copy
    import pickle

    from skillos.evals.backends.usage import Metered

    metered = Metered(_Backend(), "openai")
    assert metered.model == "m"
    assert pickle.loads(pickle.dumps(metered)).model == "m" and copy.copy(metered).model == "m"
    with pytest.raises(AttributeError):
        metered.nothing_here  # noqa: B018 - an attribute the backend lacks is still an AttributeError


class _Backend:
    """A backend as make_chat builds one (module level: a local class does not pickle)."""

    model = "m"

    def chat(self, messages, tools=None):
        return None
