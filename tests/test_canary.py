"""Learning canaries (training/canary): the verdicts come from evals/stats.py, a canary passes
only when training improves and its negative control does not, each is recorded with the code
hash it vouches for, and a launch that spends GPUs is refused without a passing one."""

import json

import pytest

from conftest import ROOT, run_cli
from skillos import config, gates
from skillos.ledger import Ledger
from skillos.errors import SkillosError
from skillos.training import canary as canaries
from skillos.training.canary import identity

PAPER = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"
CPU_SMOKE = ROOT / "training" / "configs" / "cpu-smoke.yaml"
SELECTOR_GPU = ROOT / "training" / "configs" / "selector-gpu-clean-oracle.yaml"


def outcomes(wins: int, n: int = 20, start: int = 0) -> dict:
    return {f"g{i}": start <= i < start + wins for i in range(n)}


def measured(before, after, control) -> canaries.Measured:
    return canaries.Measured("metric", before, after, control)


def result_of(m: canaries.Measured, trainer="curator", code="abc", quick=False) -> dict:
    from skillos.ledger.store import canary_passed

    result = {**canaries.judged_result([m]), "trainer": trainer, "quick": quick, "code_hash": code,
              "held_out": {"split": "sealed", "games": "sealed-games-01", "looks": 1}}
    return {**result, "passed": canary_passed(result)}


def test_a_canary_passes_only_when_training_improves_and_its_control_does_not():
    before = outcomes(4)
    learned, flat = outcomes(16), outcomes(4)
    ok = result_of(measured(before, learned, flat))
    assert ok["verdict"] == "improvement" and ok["control"]["verdict"].startswith("not detected") and ok["passed"]
    assert (ok["b"], ok["c"], ok["n"]) == (12, 0, 20)
    # the control learned too: the signal was not what moved the number
    assert not result_of(measured(before, learned, learned))["passed"]
    # nothing learned
    assert not result_of(measured(before, flat, flat))["passed"]


def test_a_sign_flipped_control_that_improves_fails_the_canary_and_every_control_is_printed():
    before, learned, flat = outcomes(4), outcomes(16), outcomes(4)
    judged = canaries.judge(canaries.Measured("metric", before, learned, flat, flipped_after=learned))
    assert set(judged) == {"trained", "control", "flipped"}
    assert judged["flipped"]["verdict"].word == "improvement"
    from skillos.ledger.store import canary_passed

    control = {"b": 0, "c": 0, "p": 1.0, "verdict": judged["control"]["verdict"].label, "after": 0.2}
    flipped = {"b": 12, "c": 0, "p": 0.0005, "verdict": judged["flipped"]["verdict"].label, "after": 0.8}
    row = {"verdict": "improvement", "control": control, "controls": {"flipped": flipped},
           "seeds": [{"seed": 0, "direction": "up"}]}
    assert not canary_passed(row)  # the sign-flipped run learned as well: the signal is not what moved it
    worse = canaries.judge(canaries.Measured("metric", outcomes(10), outcomes(16), outcomes(10), flipped_after=outcomes(2)))
    assert worse["flipped"]["verdict"].word == "regression"
    row["controls"]["flipped"]["verdict"] = worse["flipped"]["verdict"].label
    assert canary_passed(row)
    text = canaries.line({**row, "trainer": "curator", "passed": True, "metric": "m", "before": 0.2, "after": 0.8,
                          "n": 20, "b": 12, "c": 0, "p": 0.0005, "wall_s": 3, "code_hash": "abc"})
    assert "shuffled control -> 20%" in text and "sign-flipped control -> 80%" in text


def test_seeds_are_pooled_by_seed_and_task_and_every_seed_must_move_up():
    from skillos.ledger.store import canary_passed

    def seed(s, before, after, control=4, flipped=2):
        return canaries.Measured("metric", outcomes(before), outcomes(after), outcomes(control),
                                 flipped_after=outcomes(flipped), seed=s)

    good = canaries.judged_result([seed(0, 4, 12), seed(1, 4, 10), seed(2, 4, 9)])
    assert good["n"] == 60 and (good["b"], good["c"]) == (19, 0)  # 3 seeds x 20 tasks, paired by seed and task
    assert [x["direction"] for x in good["seeds"]] == ["up", "up", "up"] and good["verdict"] == "improvement"
    assert all(good["rule"][k] for k in ("pooled_improvement", "every_seed_up", "no_control_improves"))
    assert good["rule"]["text"] == canaries.RULE and canary_passed(good)
    assert set(good["seeds"][0]["controls"]) == {"flipped"} and set(good["detail"]) == {"0", "1", "2"}
    # the pool is an improvement, but one seed went down: the rule, declared first, says FAIL
    mixed = canaries.judged_result([seed(0, 4, 16), seed(1, 4, 16), seed(2, 6, 4)])
    assert mixed["verdict"] == "improvement" and mixed["seeds"][2]["direction"] == "down"
    assert mixed["rule"]["every_seed_up"] is False and not canary_passed(mixed)
    flat = canaries.judged_result([seed(0, 4, 16), seed(1, 4, 4)])
    assert flat["seeds"][1]["direction"] == "flat" and not canary_passed(flat)
    # a control that learned too, pooled: FAIL whatever the trained runs did
    copied = canaries.judged_result([seed(s, 4, 12, control=12) for s in (0, 1, 2)])
    assert copied["rule"]["no_control_improves"] is False and not canary_passed(copied)
    assert not canary_passed({**good, "seeds": []})  # no seed recorded: nothing to vouch with
    text = canaries.line({**good, "trainer": "curator", "passed": True, "wall_s": 1, "code_hash": "abc"})
    assert "(seed 0 up, b/c 8/0) (seed 1 up, b/c 6/0) (seed 2 up, b/c 5/0)" in text


def test_where_the_answer_depends_on_the_input_every_stratum_must_improve_on_its_own():
    """A trainer that ignored its prompt can raise both task types from a start below a constant
    answer (training/canary's beats_best_constant clause judges that, tests/test_canary_payoff.py);
    from an even start it raises one type by lowering the other, or
    both a little from a garbled start: a pooled improvement made of heat up and cool down fails,
    and so does one whose second stratum rose by a task; each stratum an improvement passes."""
    from skillos.ledger.store import canary_passed

    strata = {f"g{i}": "heat" if i < 20 else "cool" for i in range(40)}

    def run(heat_after, cool_after, before=5):
        start = {f"g{i}": i % 20 < before for i in range(40)}
        after = {f"g{i}": (i % 20 < heat_after) if i < 20 else (i % 20 < cool_after) for i in range(40)}
        return canaries.judged_result([canaries.Measured("metric", start, after, start, flipped_after=start,
                                                         seed=0, strata=strata)])

    constant = run(heat_after=20, cool_after=2)  # everything on the heat skill: heat 5 -> 20, cool 5 -> 2
    assert constant["verdict"] == "improvement" and constant["seeds"][0]["direction"] == "up"
    by = {x["stratum"]: x for x in constant["strata"]}
    assert (by["heat"]["b"], by["heat"]["c"], by["heat"]["n"]) == (15, 0, 20) and by["cool"]["direction"] == "down"
    assert by["heat"]["improvement"] and not by["cool"]["improvement"]
    assert constant["rule"]["every_stratum_improves"] is False and not canary_passed(constant)
    garbled = run(heat_after=2, cool_after=12, before=1)  # both up, one by a single task: not shown for heat
    assert {x["stratum"]: x["direction"] for x in garbled["strata"]} == {"heat": "up", "cool": "up"}
    assert garbled["verdict"] == "improvement" and not canary_passed(garbled)
    both = run(heat_after=14, cool_after=13)
    assert both["rule"]["every_stratum_improves"] is True and canary_passed(both)
    text = canaries.line({**both, "trainer": "curator", "passed": True, "wall_s": 1, "code_hash": "abc"})
    assert "(cool: b/c 8/0 of 20, improvement) (heat: b/c 9/0 of 20, improvement)" in text
    # one right answer for every task (no strata): the clause does not apply
    plain = canaries.judged_result([canaries.Measured("metric", outcomes(4), outcomes(12), outcomes(4), seed=0)])
    assert plain["strata"] == [] and plain["rule"]["every_stratum_improves"] is None and canary_passed(plain)


def test_a_canary_takes_its_seeds_from_its_config_and_quick_runs_one(tmp_path):
    from skillos.errors import ConfigError

    for name in ("curator", "selector", "optimize"):
        chosen = canaries.canary(name)
        assert chosen.config().canary.seeds == [0, 1, 2] and chosen.config(quick=True).canary.seeds == [0]
    for bad in ("[]", "[[1]]", "[{}]", "[1, 1]", "[-1]", "[true]"):  # never a TypeError
        with pytest.raises(ConfigError, match="canary.seeds: 1 to 64 distinct integer seeds"):
            config.with_sets(config.load(CPU_SMOKE), [f"canary.seeds={bad}"])
    # a key added later keeps every published hash: at its default it is not in the identity. A
    # default that changed changes it: the gates' acceptance rule became the method's strict, so a
    # config that never chose one is another experiment (with the old rule it hashes as published)
    quick = config.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    assert quick.hash() == "663b65666ea11953"
    assert config.with_sets(quick, ["optimize.gate.mode=paired", "sleep.gate.mode=paired"]).hash() == "7876ff12c4e2ae8f"
    base = config.load(CPU_SMOKE)
    assert config.with_sets(base, ["canary.seeds=[0, 1]"]).hash() != base.hash()


def test_a_control_destroys_the_signal_one_way_or_the_other():
    from skillos.training.textopt.optimize import destroyed as optimize_destroyed
    from skillos.training.common.grpo import destroyed

    values, groups = [0.0, 1.0, None, 0.5], list("aabb")
    assert destroyed(values, groups, "s", "real") == values
    assert destroyed(values, groups, "s", "flipped") == [-0.0, -1.0, None, -0.5]  # unmeasured stays so
    shuffled = destroyed(values, groups, "s", "shuffled")
    assert sorted(shuffled[:2]) == [0.0, 1.0] and set(shuffled[2:]) == {None, 0.5}
    from skillos.evals.trajectory import Trajectory

    seen = [Trajectory(f"t{i}", "task", "", steps=[], won=w, retrieved=[]) for i, w in enumerate((True, False, None))]
    inc, cand = {"a": True, "b": False}, {"a": False, "b": True}
    flipped, judged_inc, judged_cand = optimize_destroyed(seen, inc, cand, "s", "flipped")
    assert [t.won for t in flipped] == [False, True, None] and (judged_inc, judged_cand) == (cand, inc)


def test_unmeasured_tasks_are_dropped_and_counted_never_scored():
    before, after = outcomes(4), outcomes(16)
    before["g19"] = None
    judged = canaries.judge(measured(before, after, outcomes(4)))["trained"]["comparison"]
    assert judged.n_paired == 19 and judged.n_dropped == 1


def fake_sources(monkeypatch, tmp_path, names) -> dict:
    """Modules `names` read from files under tmp_path (what identity.source finds), so a test can
    edit the code a canary ran without touching the checkout."""
    files = {}
    for name in names:
        files[name] = tmp_path / f"{name}.py"
        files[name].write_text(f"# {name}\nx = 1\n")
    real = identity.source
    monkeypatch.setattr(identity, "source", lambda name: files.get(name) or real(name))
    return files


def test_a_canary_identity_covers_every_module_it_ran_its_config_and_libraries(tmp_path, monkeypatch):
    files = fake_sources(monkeypatch, tmp_path, ["skillos.training.curator.pipeline", "skillos.training.common.prompt_cap"])
    first = identity.identity(files, "cfg1")
    assert identity.identity(list(files)[::-1], "cfg1") == first  # order does not matter
    assert set(first["modules"]) == set(files) and set(first["versions"]) == set(identity.LIBRARIES)
    assert identity.changes(first, "cfg1") == []
    assert identity.changes(first, "cfg2") == ["the canary's config changed"]
    files["skillos.training.curator.pipeline"].write_text("x = 2\n")  # an edit to a module the run imported
    assert identity.changes(first, "cfg1") == ["skillos.training.curator.pipeline changed"]
    assert identity.identity(files, "cfg1")["code_hash"] != first["code_hash"]
    files["skillos.training.common.prompt_cap"].unlink()
    assert "skillos.training.common.prompt_cap removed" in identity.changes(first, "cfg1")
    assert identity.changes({"code_hash": "x"}, "cfg1") == ["it carries no identity (recorded before canaries did)"]


def test_the_modules_a_run_imported_are_read_from_sys_modules():
    import skillos.training.curator.reward  # noqa: F401 - imported: it is part of what ran

    loaded = identity.loaded_modules()
    assert "skillos.training.curator.reward" in loaded and "skillos.config" in loaded
    assert identity.source("skillos.training.curator.reward") == ROOT / "training" / "curator" / "reward.py"
    assert identity.source("skillos.config") == ROOT / "toolkit" / "config" / "__init__.py"
    assert identity.source("skillos.config.rules") == ROOT / "toolkit" / "config" / "rules.py"
    assert identity.source("skillos.evals") == ROOT / "evals" / "__init__.py"
    assert identity.source("skillos.training.no_such_module") is None


def test_every_canary_resolves_its_config_and_each_size_is_its_own_identity():
    for name in canaries.CANARIES.names():
        chosen = canaries.canary(name)
        full, quick = (identity.config_digest(chosen.config(q)) for q in (False, True))
        assert chosen.metric and full != quick, name
        assert identity.config_digest(config.with_sets(chosen.config(), ["compute.backend=ray"])) == full, name


def test_a_folder_made_by_other_code_is_refused_never_restamped(tmp_path, monkeypatch):
    files = fake_sources(monkeypatch, tmp_path, ["skillos.training.curator.reward"])
    out = tmp_path / "canary"
    identity.guard(out, "cfg")  # absent: fine
    (out / "trained" / "checkpoint-4").mkdir(parents=True)
    with pytest.raises(SkillosError, match="no canary-identity.json"):
        identity.guard(out, "cfg")  # files of something else
    identity.stamp(out, "cfg", ["skillos.training.curator.reward"])
    assert identity.recorded_modules(out / "trained" / "checkpoint-4" / identity.IDENTITY) == ["skillos.training.curator.reward"]
    identity.stamp(out, "cfg", [])  # a rerun that imported less keeps what the folder records
    assert identity.recorded_modules(out / identity.IDENTITY) == ["skillos.training.curator.reward"]
    identity.guard(out, "cfg")  # the same code: its runs may be reused
    with pytest.raises(SkillosError, match="the canary's config changed"):
        identity.guard(out, "other")  # --quick into a full-size folder
    files["skillos.training.curator.reward"].write_text("sign = -1\n")  # the reward's sign flipped since
    with pytest.raises(SkillosError, match="skillos.training.curator.reward changed"):
        identity.guard(out, "cfg")


def test_the_ledger_counts_a_canary_by_its_own_verdicts_and_run(skillos_home):
    from conftest import record_canary

    with Ledger(skillos_home / "ledger.db") as ledger:
        good = record_canary(ledger, "curator")
        assert [r["id"] for r in ledger.passing_canaries("curator")] == [good]
        assert ledger.passing_canaries("selector:clean-oracle") == []
        record_canary(ledger, "curator", verdict="not detected")  # the trained run did not improve
        record_canary(ledger, "curator", control="improvement")  # its control learned too
        record_canary(ledger, "curator", quick=True)  # a --quick run vouches for nothing
        record_canary(ledger, "curator", status="crashed")  # its run did not finish
        assert [r["id"] for r in ledger.passing_canaries("curator")] == [good]
        # a row that says it passed while its own verdicts say it failed
        run = ledger.start_run(None, "canary", {})
        forged = ledger.add_canary(run, {**result_of(measured(outcomes(4), outcomes(4), outcomes(4))),
                                         "passed": True})
        ledger.end_run(run, "finished")
        assert ledger.row("canaries", forged)["passed"] == 0
        assert [r["id"] for r in ledger.passing_canaries("curator")] == [good]
        ledger.correct("runs", ledger.row("canaries", good)["run_id"], "invalidate", "a broken checkout")
        assert ledger.passing_canaries("curator") == []


def test_a_degenerate_or_unjudged_canary_never_vouches(skillos_home, tmp_path, monkeypatch):
    """An identity that lists a module missing when it ran, or not the canary's own trainer, or a
    malformed one; a control that could not be judged: none of them passes gate 6."""
    from conftest import record_canary
    from skillos.gates.learning import standing, vouching

    with Ledger(skillos_home / "ledger.db") as ledger:
        unjudged = record_canary(ledger, "curator", control="not reportable")
        assert ledger.row("canaries", unjudged)["passed"] == 0 and ledger.passing_canaries("curator") == []
        run = ledger.start_run(None, "canary", {})
        for odd in (None, "x", [1]):  # controls that are not a dict of verdicts
            result = {**result_of(measured(outcomes(4), outcomes(16), outcomes(4))), "controls": odd}
            assert ledger.row("canaries", ledger.add_canary(run, result))["passed"] == (odd is None)
        ledger.end_run(run, "finished")
        rows = ledger.passing_canaries("curator")
    digest = identity.config_digest(canaries.canary("curator").config())
    base = {**rows[0], "result": {**rows[0]["result"]}}
    for modules, says in ((["skillos.does_not_exist"], "skillos.does_not_exist was missing when it ran"),
                          (["skillos.errors"], "it does not record running skillos.training.curator.canary")):
        row = {**base, "result": {**base["result"], "identity": identity.identity(modules, digest)}}
        found, stale = vouching("curator", [row])
        assert found is None and any(says in c for c in stale[1]), stale
    row = {**base, "result": {**base["result"], "identity": {"modules": {"a": "b"}, "versions": "abc"}}}
    assert vouching("curator", [row])[1][1] == ["its identity is malformed (modules: name -> sha, versions: library "
                                                "-> version)"]
    with Ledger(skillos_home / "ledger.db") as ledger:  # the newest stale, an older one still holding
        files = fake_sources(monkeypatch, tmp_path, ["skillos.training.curator.pipeline"])
        older = record_canary(ledger, "curator")
        record_canary(ledger, "curator", modules=list(files))
        files["skillos.training.curator.pipeline"].write_text("# edited\n")
        entry = next(e for e in standing(ledger) if e["trainer"] == "curator")
    assert entry["vouching"] == older and entry["covers_current_code"] and entry["last_passing"] != older
    assert recipe(gates.check(config.load(PAPER))).detail.startswith(f"canary #{older}")


def fake_loaded(monkeypatch, tmp_path, name: str):
    """skillos module `name` imported in this process (what identity.loaded_modules lists) from a
    file under tmp_path (fake_sources): a test edits the code a canary runs without the checkout."""
    import sys
    import types

    (path,) = fake_sources(monkeypatch, tmp_path, [name]).values()
    module = types.ModuleType(name)
    module.__file__ = str(path)
    monkeypatch.setitem(sys.modules, name, module)
    return path


def record_passing(home, trainer: str, modules=("skillos.training.curator.trainer", "skillos.evals.judge")) -> None:
    from conftest import record_canary

    with Ledger(home / "ledger.db") as ledger:
        record_canary(ledger, trainer, modules=modules)


def recipe(report):
    return next(r for r in report.results if r.check == "recipe-learns")


def test_a_gpu_launch_is_refused_until_its_trainers_canary_passed(skillos_home):
    cfg = config.load(PAPER)
    refused = recipe(gates.check(cfg))
    assert refused.status == "FAIL" and "skillos canary curator" in refused.detail and refused.gates == (6,)
    record_passing(skillos_home, "selector:clean-oracle")  # another trainer's canary
    assert recipe(gates.check(cfg)).status == "FAIL"
    record_passing(skillos_home, "curator", modules=("skillos.training.curator.trainer",))  # never ran the judge
    unvouched = recipe(gates.check(cfg))  # the paper config's content reward calls it on every rollout
    assert unvouched.status == "FAIL" and "the launch will run code it never ran: skillos.evals.judge " \
        "(reward.lambda_cnt 0.1 with judge openai)" in unvouched.detail
    engine = recipe(gates.check(config.with_sets(cfg, ["env.engine_workers=2"])))
    assert "skillos.evals.envs.alfworld.pool (env.engine_workers 2)" in engine.detail
    record_passing(skillos_home, "curator")
    passed = recipe(gates.check(cfg))
    assert passed.status == "PASS" and "b/c 12/0" in passed.detail
    assert recipe(gates.check(config.load(CPU_SMOKE))).status == "SKIP"  # the local CPU spends no GPU


def test_a_refusal_quotes_the_wall_time_canaries_took_on_this_kind_of_machine(skillos_home, monkeypatch):
    import os

    from conftest import record_canary
    from skillos.devices import machine_kind

    cfg = config.load(PAPER)
    untimed = recipe(gates.check(cfg)).detail
    assert "never timed in this ledger" in untimed and f"this machine: {os.cpu_count()} CPU cores" in untimed
    here = machine_kind()
    with Ledger(skillos_home / "ledger.db") as ledger:  # failed canaries: timed all the same
        record_canary(ledger, "curator", verdict="no change", extra={"wall_s": 3000, "machine": {**here, "cpus": 64}})
    assert "median 50.0 min over 1 finished canary (50.0 min-50.0 min) on other machines" in recipe(gates.check(cfg)).detail
    with Ledger(skillos_home / "ledger.db") as ledger:
        for wall in (1200, 2400):
            record_canary(ledger, "curator", verdict="no change", extra={"wall_s": wall, "machine": here})
        record_canary(ledger, "curator", quick=True, extra={"wall_s": 60, "machine": here})  # another size
        record_canary(ledger, "selector:clean-oracle", verdict="no change", extra={"wall_s": 9, "machine": here})
        record_canary(ledger, "curator", verdict="no change", extra={"wall_s": "soon", "machine": here})  # damaged
    detail = recipe(gates.check(cfg)).detail
    assert "(its wall time measured: median 30.0 min over 2 finished canaries (20.0 min-40.0 min) on this kind of machine;" \
        in detail


def test_a_refusal_says_when_the_canary_it_names_is_refused_by_its_own_payoff_table(monkeypatch, skillos_home):
    """A miniature measured to be refused by its payoff table (as the curator's was at stop 74: a
    recombined skill tied reading the task): gate 6 says so instead of sending a person to run a
    canary that cannot pass."""
    from skillos.training.curator.canary import CuratorCanary

    cfg = config.load(PAPER)
    assert CuratorCanary.refused is None  # the rebuilt miniature: not refused
    monkeypatch.setattr(CuratorCanary, "refused", "payoff table holds a constant answer that ties reading the task, "
                        "so the canary refuses before training until its miniature is rebuilt")
    detail = recipe(gates.check(cfg)).detail
    assert "refuses before training until its miniature is rebuilt" in detail and "then launch again" not in detail
    assert "only a person's --override recipe-learns" in detail
    monkeypatch.setattr(CuratorCanary, "refused", None)  # a miniature that is not refused
    detail = recipe(gates.check(cfg)).detail
    assert "then launch again" in detail and "rebuilt" not in detail


def test_a_canary_estimate_says_which_runs_it_read():
    kind = {"cpus": 2, "cuda": 0, "backend": "local"}
    timings = [{"wall_s": 7200.0, "machine": kind, "config": "old"},
               {"wall_s": 600.0, "machine": {**kind, "backend": "ray"}, "config": "now"}]
    said = canaries.expected_time("now", timings, kind)
    assert said.startswith("measured: median 2.0 h over 1 finished canary") and "at another config" in said
    assert said.endswith("this machine: 2 CPU cores, no GPU, local")
    assert canaries.expected_time("now", [], kind).startswith(canaries.UNTIMED)


def test_a_canary_stops_vouching_once_a_module_it_ran_changes(skillos_home, tmp_path, monkeypatch):
    files = fake_sources(monkeypatch, tmp_path, ["skillos.training.curator.pipeline"])
    record_passing(skillos_home, "curator", modules=[*files, "skillos.training.curator.trainer", "skillos.evals.judge"])
    cfg = config.load(PAPER)
    assert recipe(gates.check(cfg)).status == "PASS"
    files["skillos.training.curator.pipeline"].write_text("# every curator tool loop, edited\n")
    stale = recipe(gates.check(cfg))
    assert stale.status == "FAIL" and "skillos.training.curator.pipeline changed" in stale.detail
    assert "no longer covers the code" in stale.detail
    with Ledger(skillos_home / "ledger.db") as ledger:
        from skillos.gates.learning import standing

        (row,) = standing(ledger)
    assert row["trainer"] == "curator" and row["covers_current_code"] is False
    assert row["changed"] == ["skillos.training.curator.pipeline changed"]


def test_a_launch_is_gated_by_the_gpus_it_will_use_not_the_ones_it_declares(skillos_home, monkeypatch):
    from skillos import devices

    lora = config.load(ROOT / "training" / "configs" / "single-gpu-lora.yaml")
    unset = config.with_sets(lora, ["compute.gpu=null"])  # vllm executor, curator and judge: GPU only
    for check in ("recipe-learns", "approved-plan"):
        result = next(r for r in gates.check(unset, command="train").results if r.check == check)
        assert result.status == "FAIL" and "vllm" in result.detail, (check, result.detail)
    # the CPU smoke config on a process that sees a CUDA device: torch would train on it
    smoke = config.load(CPU_SMOKE)
    assert not devices.gpu_launch(smoke, cuda=0)
    assert recipe(gates.check(smoke)).status == "SKIP"
    monkeypatch.setattr(devices, "cuda_devices", lambda: 2)
    launch = devices.gpu_launch(smoke)
    assert launch and "sees 2 CUDA device(s)" in launch.why
    results = {r.check: r for r in gates.check(smoke, command="train").results}
    assert results["recipe-learns"].status == "FAIL" and results["approved-plan"].status == "FAIL"
    assert results["gpu-declared"].status == "FAIL" and "compute.gpu" in results["gpu-declared"].detail
    assert "CUDA_VISIBLE_DEVICES=" in results["gpu-declared"].detail
    declared = config.with_sets(smoke, ["compute.gpu=L4:2"])
    assert next(r for r in gates.check(declared).results if r.check == "gpu-declared").status == "PASS"
    # a no-model eval on a GPU machine puts nothing on the GPU: not a GPU launch
    quick = config.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    assert not devices.gpu_launch(quick)
    # ... but a checkpoint arm runs its curator on a local backend: it is
    ckpt = config.with_sets(quick, ["eval.arms=[no_memory, 'curator:a']", f"eval.curators={{a: {ROOT}}}"])
    assert "eval arm curator:a: curator.backend hf" in devices.gpu_launch(ckpt).why
    assert devices.undeclared(ckpt) and not devices.gpu_launch(ckpt, cuda=0)
    # every launch path asks the same predicate: the library's train refuses before any weight moves
    from skillos.training.common.grpo import on_cpu

    monkeypatch.setitem(__import__("sys").modules, "torch", _FakeTorch(2))
    with pytest.raises(SkillosError, match="compute.gpu"):
        on_cpu(smoke)
    assert on_cpu(declared) is False


class _FakeTorch:
    """torch as a process that sees `n` CUDA devices reports it (the trainer asks nothing else first)."""

    def __init__(self, n):
        import types

        self.cuda = types.SimpleNamespace(device_count=lambda: n, is_available=lambda: n > 0)


def test_the_selector_canary_is_per_credit_variant(skillos_home):
    cfg = config.load(SELECTOR_GPU)
    record_passing(skillos_home, f"selector:{cfg.skillgate.selector_credit}")
    assert recipe(gates.check(cfg)).status == "PASS"
    other = "first-oracle" if cfg.skillgate.selector_credit != "first-oracle" else "clean-oracle"
    mutated = config.with_sets(cfg, [f"skillgate.selector_credit={other}"])
    assert recipe(gates.check(mutated)).status == "FAIL"


def test_gate_check_cli_names_the_command_to_run(skillos_home):
    result = run_cli("gate", "check", PAPER, "--json")
    assert result.returncode == 1
    failed = [r for r in json.loads(result.stdout)["results"] if r["status"] == "FAIL"]
    assert [r["check"] for r in failed] == ["recipe-learns"] and "skillos canary curator" in failed[0]["detail"]


def test_an_unknown_canary_is_one_line():
    result = run_cli("canary", "curatorr")
    assert result.returncode == 2 and "no such canary" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_the_quick_curator_canary_runs_end_to_end_and_records_itself(tmp_path, game_cache, skillos_home):
    result = run_cli("canary", "curator", "--quick", "--json", "--out", tmp_path / "c")
    assert result.returncode in (0, 1), result.stderr[-3000:]
    data = json.loads(result.stdout)
    assert {"trainer", "metric", "n", "before", "after", "b", "c", "p", "verdict", "control", "code_hash",
            "wall_s"} <= set(data)
    assert {"b", "c", "p", "verdict"} <= set(data["control"]) and data["quick"] is True
    assert data["n"] + data["n_dropped"] == 4  # 12 held-out games: 4 groups of 3 (2 heat, 2 clean)
    with Ledger(skillos_home / "ledger.db") as ledger:
        (row,) = ledger.canaries("curator")
        assert row["quick"] == 1 and row["code_hash"] == data["code_hash"]
        assert ledger.passing_canaries("curator") == []  # quick vouches for nothing
    assert "reward health" in result.stderr and "policy entropy" in result.stderr
    # each run says whether it learned anything, and at this size its weights move: a gradient in
    # some step, read from TRL's own trainer_state as a user would, and the checkpoint differs
    # from the warm start
    assert [x["seed"] for x in data["seeds"]] == [0] and data["rule"]["text"] == canaries.RULE
    assert "the pass rule, declared before the run" in result.stderr
    from skillos.devices import machine_kind

    assert data["machine"] == machine_kind() and "expected wall time: never timed in this ledger" in result.stderr
    signals = data["detail"]["0"]["learning_signal"]
    assert set(signals) == {"trained", "control", "flipped"}  # the run and both negative controls
    assert all(s["line"].startswith("learning signal: ") and s["steps"] == 4 for s in signals.values())
    assert set(data["controls"]) == {"flipped"} and {"b", "c", "p", "verdict"} <= set(data["controls"]["flipped"])
    assert "rewards sign-flipped (negative control)" in result.stderr
    state = json.loads((tmp_path / "c" / "seed-0" / "trained" / "archive" / "checkpoint-4" / "trainer_state.json").read_text())
    assert any((h.get("grad_norm") or 0) > 0 for h in state["log_history"])
    assert signals["trained"]["grad_nonzero"] >= 1
    assert ((tmp_path / "c" / "seed-0" / "trained" / "checkpoint-4" / "model.safetensors").read_bytes()
            != (tmp_path / "c" / "warm" / "model.safetensors").read_bytes())
    # what 4 held-out groups can show, said: the smallest p is 0.125, above alpha
    res = data["resolution"]
    assert res["n"] == data["n"] and res["can_detect"] is False and res["smallest_p"] >= 0.125
    assert "cannot show learning" in res["line"]
    # its identity: every module it ran (not a hand-picked list), in its folder and every checkpoint
    ran = data["identity"]
    assert {"skillos.training.curator.pipeline", "skillos.training.common.prompt_cap", "skillos.config",
            "skillos.training.curator.reward"} <= set(ran["modules"]) and ran["code_hash"] == data["code_hash"]
    stamps = sorted((tmp_path / "c").rglob(identity.IDENTITY))
    assert {p.parent.name for p in stamps} >= {"c", "warm", "trained", "control", "flipped", "checkpoint-4"}
    assert all(json.loads(p.read_text())["code_hash"] == data["code_hash"] for p in stamps if "checkpoint" in str(p))
    # the trained run made by other code (a module's source differed): a rerun is refused, never re-stamped
    trained = tmp_path / "c" / "seed-0" / "trained" / identity.IDENTITY
    other = json.loads(trained.read_text())
    other["modules"]["skillos.training.curator.reward"] = "0" * 16
    trained.write_text(json.dumps(other))
    again = run_cli("canary", "curator", "--quick", "--json", "--out", tmp_path / "c")
    assert again.returncode == 2 and "skillos.training.curator.reward changed" in again.stderr and not again.stdout
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert len(ledger.canaries("curator")) == 1


def test_a_profile_without_selection_credit_is_vouched_for_by_the_methods_canary(skillos_home):
    cfg = config.with_sets(config.load(SELECTOR_GPU), ["skillgate.selector_credit=task-mask-only",
                                                        "skillgate.selector_coef=0.0"])
    refused = recipe(gates.check(cfg))
    assert refused.status == "FAIL" and "skillos canary selector --credit clean-oracle" in refused.detail
    record_passing(skillos_home, "selector:clean-oracle")
    passed = recipe(gates.check(cfg))
    assert passed.status == "PASS" and "task-mask-only gives the selection no credit" in passed.detail
    # a profile with a credit of its own needs its own canary
    hybrid = config.with_sets(config.load(SELECTOR_GPU), ["skillgate.selector_credit=hybrid_slate"])
    assert "skillos canary selector --credit hybrid_slate" in recipe(gates.check(hybrid)).detail


def test_a_credit_the_canary_cannot_check_is_one_line():
    result = run_cli("canary", "selector", "--credit", "task-mask-only")
    assert result.returncode == 2 and "no variant 'task-mask-only'" in result.stderr and "Traceback" not in result.stderr
    result = run_cli("canary", "curator", "--credit", "clean-oracle")
    assert result.returncode == 2 and "--credit is the selector's" in result.stderr and "--variant" in result.stderr
    result = run_cli("canary", "curator", "--variant", "clean-oracle")
    assert result.returncode == 2 and "no variant 'clean-oracle'; choose one of async" in result.stderr
    result = run_cli("canary", "optimize", "--variant", "async")
    assert result.returncode == 2 and "it has none" in result.stderr
    result = run_cli("canary", "selector", "--credit", "clean-oracle", "--variant", "clean-oracle")
    assert result.returncode == 2 and "name the same choice" in result.stderr


def test_a_canary_takes_where_it_runs_and_nothing_else(tmp_path, skillos_home):
    """--set takes compute.* keys only: the miniature is fixed (a canary tuned until it passes
    proves nothing); each refusal is one line, before anything is recorded or written."""
    for item, says in (("env.n_games=3", "only compute.* keys"), ("training.max_steps=400", "only compute.* keys"),
                       ("compute.backend=accelerate", "compute.backend local or ray"),
                       ("compute={backend: modal}", "compute.backend local or ray"),
                       ("compute.num_processes=2", "compute.num_processes does nothing for a canary"),
                       ("compute.ray_max_retries=-1", "compute.ray_max_retries: must be between"),
                       ("compute.workers=2", "compute.workers: unknown key")):
        result = run_cli("canary", "optimize", "--quick", "--set", item, "--out", tmp_path / "c")
        assert result.returncode == 2 and says in result.stderr, (item, result.stderr[-2000:])
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "c").exists() and not (skillos_home / "ledger.db").exists()
    assert canaries.compute_sets(["compute.backend=ray", "compute.ray_max_retries=1"]) == [
        "compute.backend=ray", "compute.ray_max_retries=1"]


def test_a_canary_checks_its_extras_before_anything_is_written(tmp_path, skillos_home, monkeypatch):
    """On the base install (no torch) a canary is one line naming the install, before its folder,
    its ledger run or its games exist."""
    import importlib.util

    from skillos import api

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(SkillosError, match=r"canary curator: training needs what is not installed \(missing torch\); "
                                           r"install with: pip install torch"):
        api.canary("curator", quick=True, out=tmp_path / "c")
    assert not (tmp_path / "c").exists() and not (skillos_home / "ledger.db").exists()


def test_a_canary_stopped_by_sigterm_is_recorded_as_interrupted(tmp_path, skillos_home, game_cache):
    """`kill PID` on a running canary: its ledger run ends as interrupted, never left running."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "SKILLOS_HOME": str(skillos_home)}
    proc = subprocess.Popen([sys.executable, "-m", "skillos", "canary", "optimize", "--quick", "--out",
                             str(tmp_path / "c")], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (tmp_path / "c" / identity.IDENTITY).exists():
        time.sleep(0.2)
    time.sleep(1.0)  # its ledger run has started
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-2000:]
    with Ledger(skillos_home / "ledger.db") as ledger:
        (run,) = ledger.rows("runs")
        assert run["status"] == "interrupted" and "SystemExit" in (run["detail"] or "")


def test_a_canary_says_what_its_size_can_show():
    from skillos.training.canary import resolution

    def ran(*signals):
        return [canaries.Measured("m", {}, {}, {}, detail={"learning_signal": {"trained": x}}) for x in signals]

    moved = ran({"grad_nonzero": 1, "grad_logged": 2}, {"grad_nonzero": 2, "grad_logged": 2})  # two seeds, summed
    quick = resolution(4, 0.05, moved)
    assert quick["smallest_p"] == pytest.approx(0.125) and quick["can_detect"] is False
    assert quick["line"] == ("what this size can show: the smallest p 4 paired tasks allow is 0.12 (all 4 discordant "
                             "one way), not below alpha 0.05: it cannot show learning, only that the trainer runs "
                             "end to end and whether its weights moved (grad_norm > 0 in 3 of 4 trained steps)")
    full = resolution(40, 0.05, [])
    assert full["can_detect"] is True and full["smallest_p"] < 1e-10 and full["weights_moved"] is None
    assert "it can detect learning" in full["line"]
    assert resolution(5, 0.05, [])["can_detect"] is False and resolution(6, 0.05, [])["can_detect"] is True
    nothing = resolution(0, 0.05, ran(None))  # every pair unmeasured, a reused run's signal unknown
    assert nothing["smallest_p"] is None and nothing["can_detect"] is False and "no paired task" in nothing["line"]


class _Fake(canaries.Canary):
    """A canary whose trainer 'learns' 6 of 20 tasks on every seed (exact p 0.031 at one look):
    run() end to end, its ledger rows, its split and its looks, in a second."""

    name, ran, metric = "curator", (), "metric"

    def config(self, quick=False, variant=None):
        return config.with_sets(config.load(CPU_SMOKE), ["canary.seeds=[0]"])

    def measure(self, out, quick, echo, variant=None, compute=()):
        cfg = config.with_sets(self.config(quick), list(compute))
        games = f"games-at-{canaries.held_out_seed(cfg)}"
        return [canaries.Measured("metric", outcomes(4), outcomes(10), outcomes(4), flipped_after=outcomes(2),
                                  seed=s, games=games) for s in cfg.canary.seeds]


def test_the_sealed_split_counts_its_looks_and_corrects_the_p_for_them(skillos_home, tmp_path, monkeypatch):
    monkeypatch.setattr(canaries, "canary", lambda name: _Fake())
    with Ledger(skillos_home / "ledger.db") as ledger:
        first = canaries.run("curator", out=tmp_path / "1", ledger=ledger, echo=lambda _line: None)
        assert first["held_out"] == {"split": "sealed", "env_seed": 1000, "games": first["held_out"]["games"],
                                     "looks": 1, "why": None}
        assert first["p"] == pytest.approx(0.03125) and first["p_corrected"] == pytest.approx(0.03125)
        assert first["passed"] and [r["looks"] for r in ledger.passing_canaries("curator")] == [1]
        # a tuning run reads other games, counts no look, and never vouches
        tuned = canaries.run("curator", out=tmp_path / "t", ledger=ledger, echo=lambda _line: None, tune=True)
        assert tuned["held_out"]["split"] == "tuning" and tuned["held_out"]["looks"] is None
        assert tuned["held_out"]["env_seed"] == 0 and tuned["held_out"]["games"] != first["held_out"]["games"]
        assert [r["looks"] for r in ledger.passing_canaries("curator")] == [1]
        # a second look at the same sealed games: p 0.031 x 2 looks is not below alpha
        second = canaries.run("curator", out=tmp_path / "2", ledger=ledger, echo=lambda _line: None)
        assert second["held_out"]["looks"] == 2 and second["p_corrected"] == pytest.approx(0.0625)
        assert second["verdict"].startswith("not detected") and not second["passed"]
        assert "2 judged look(s) at the sealed canary split" in " ".join(second["reasons"]["trained"])
        # the first still vouches: it was judged at its own look, recounted by the ledger up to its row
        assert [r["id"] for r in ledger.passing_canaries("curator")] == [ledger.canaries("curator")[0]["id"]]
        # a row that claims fewer looks than the ledger counts is judged by the count
        forged = {**first, "held_out": {**first["held_out"], "looks": 1}}
        run = ledger.start_run(None, "canary", {})
        ledger.add_canary(run, forged)
        ledger.end_run(run, "finished")
        assert len(ledger.passing_canaries("curator")) == 1  # the forged third look: 0.031 x 3 > alpha
    # the rule was printed before the numbers; the looks are in the line
    lines = []
    monkeypatch.setattr(canaries, "canary", lambda name: _Fake())
    canaries.run("curator", out=tmp_path / "3", echo=lines.append)  # no ledger: looks uncounted
    assert "the pass rule, declared before the run" in lines[0]


def test_sealed_and_tuning_held_out_games_differ_by_content(game_cache):
    from skillos.evals.arms import load_games

    cfg = canaries.canary("curator").config()
    assert cfg.canary.split == "sealed" and canaries.held_out_seed(cfg) == cfg.canary.sealed_seed
    tuning = config.with_sets(cfg, ["canary.split=tuning"])
    assert canaries.held_out_seed(tuning) == cfg.env.seed == 0 and canaries.held_out_seed(tuning, 2) == 2
    sealed_games = load_games(config.with_sets(cfg, [f"env.seed={canaries.held_out_seed(cfg)}"]), cfg.env.split, 4)
    tuning_games = load_games(tuning, cfg.env.split, 4)
    assert [g.id for g in sealed_games] == [g.id for g in tuning_games]  # ids name an index only
    assert not {g.content_hash for g in sealed_games} & {g.content_hash for g in tuning_games}
    from skillos.evals.protocol import task_set_hash

    assert task_set_hash(sealed_games) != task_set_hash(tuning_games)


def test_a_module_edited_while_the_canary_runs_is_never_recorded_under_its_new_sha(skillos_home, tmp_path,
                                                                                   monkeypatch):
    """The identity is of the source that ran: a skillos module replaced mid-run (its sha changed
    since the start, or its file written after it) refuses the certificate, one line, the ledger run
    ended with why, no canary row."""
    module = fake_loaded(monkeypatch, tmp_path, "skillos.fake_edited")

    class Editing(_Fake):
        def measure(self, out, quick, echo, variant=None, compute=()):
            module.write_text("X = 2  # replaced while the canary ran\n")
            return super().measure(out, quick, echo, variant, compute)

    monkeypatch.setattr(canaries, "canary", lambda name: Editing())
    with Ledger(skillos_home / "ledger.db") as ledger:
        with pytest.raises(SkillosError, match=r"not recorded: skillos.fake_edited changed while the canary ran"):
            canaries.run("curator", out=tmp_path / "run", ledger=ledger, echo=lambda _line: None)
        assert ledger.canaries("curator") == []
        run = ledger.rows("runs")[-1]
        assert run["status"] == "crashed" and "changed while the canary ran" in run["detail"]
    monkeypatch.setattr(canaries, "canary", lambda name: _Fake())  # the same code left alone: recorded
    with Ledger(skillos_home / "ledger.db") as ledger:
        assert canaries.run("curator", out=tmp_path / "again", ledger=ledger, echo=lambda _line: None)["passed"]


def test_an_invalidated_canary_does_not_come_back_by_a_rerun_into_its_folder(skillos_home, tmp_path, monkeypatch):
    """A rerun into the --out of a canary whose run was invalidated would reuse its finished runs
    and record a new, valid row in seconds: refused in one line, before anything is recorded."""
    monkeypatch.setattr(canaries, "canary", lambda name: _Fake())
    with Ledger(skillos_home / "ledger.db") as ledger:
        first = canaries.run("curator", out=tmp_path / "run", ledger=ledger, echo=lambda _line: None)
        assert first["passed"]
        (row,) = ledger.canaries("curator")
        ledger.correct("runs", row["run_id"], "invalidate", "the reward's sign was flipped in this build")
        assert ledger.passing_canaries("curator") == []
        with pytest.raises(SkillosError, match=rf"canary --out {tmp_path / 'run'}: canary #{row['id']} recorded from "
                                               r"it was invalidated \(invalidate: the reward's sign"):
            canaries.run("curator", out=tmp_path / "run", ledger=ledger, echo=lambda _line: None)
        assert len(ledger.canaries("curator")) == 1 and ledger.passing_canaries("curator") == []
        canaries.run("curator", out=tmp_path / "fresh", ledger=ledger, echo=lambda _line: None)  # a new --out runs
        assert len(ledger.canaries("curator")) == 2


def test_a_library_is_known_by_where_it_loads_from_and_its_files_not_its_version_alone(tmp_path, monkeypatch):
    """A patched file under the same version, or a shadowing copy earlier on the path, is another
    library: the canary's identity no longer holds (accelerate is recorded beside torch and trl)."""
    import sys

    def install(where):
        (where / "fakelib").mkdir(parents=True)
        (where / "fakelib" / "__init__.py").write_text("def loss(x):\n    return x\n")
        meta = where / "fakelib-1.0.dist-info"
        meta.mkdir()
        (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: fakelib\nVersion: 1.0\n")

    assert {"torch", "trl", "accelerate"} <= set(identity.LIBRARIES)
    install(tmp_path / "site")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(identity, "LIBRARIES", ("fakelib",))
    before = identity.versions()["fakelib"]
    assert before.startswith("1.0, loaded from folder ") and ", files " in before
    (tmp_path / "site" / "fakelib" / "__init__.py").write_text("def loss(x):\n    return -x  # patched\n")
    patched = identity.versions()["fakelib"]
    assert patched != before and patched.split(", files")[0] == before.split(", files")[0]  # same folder
    install(tmp_path / "shadow")
    monkeypatch.syspath_prepend(str(tmp_path / "shadow"))
    sys.modules.pop("fakelib", None)
    shadowed = identity.versions()["fakelib"]
    assert shadowed.startswith("1.0, loaded from folder ") and shadowed.split(", files")[0] != before.split(", files")[0]


def test_a_module_touched_but_unchanged_keeps_the_certificate(tmp_path, monkeypatch):
    """A module hashed at the start is judged by its bytes: a touch, a save without a change or a
    checkout restoring the same bytes is not an edit; the same bytes changed are."""
    import os

    module = fake_loaded(monkeypatch, tmp_path, "skillos.fake_touched")
    started = identity.snapshot()
    later = started["started_ns"] + 10**9
    os.utime(module, ns=(later, later))
    assert identity.edited_since(started, ["skillos.fake_touched"]) == []
    module.write_text("X = 2\n")
    assert identity.edited_since(started, ["skillos.fake_touched"]) == ["skillos.fake_touched changed while the canary ran"]
