"""The launch gates: the shipped configs pass; every config that reproduces a documented failure
of the reference project is refused with the right gate named. Static checks here; the checks
that execute code are in test_gates_dryrun.py."""

import copy
import json
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, run_cli
from skillos import config, gates

CONFIGS = {
    "quickstart": ROOT / "evals" / "configs" / "quickstart.yaml",
    "paper": ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml",
    "lora": ROOT / "training" / "configs" / "single-gpu-lora.yaml",
    "cpu-smoke": ROOT / "training" / "configs" / "cpu-smoke.yaml",
}


def raw(name: str) -> dict:
    return yaml.safe_load(CONFIGS[name].read_text())


def check(data: dict, source=None, **kw) -> gates.Report:
    cfg = config.from_dict(copy.deepcopy(data))
    cfg.source = source or CONFIGS["paper"]  # relative files resolve next to the shipped configs
    return gates.check(cfg, **kw)


def by_name(report) -> dict:
    out = {}
    for r in report.results:
        out.setdefault(r.check, r)
    return out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_shipped_configs_pass_the_static_gates(name, canaries_passed):
    report = gates.check(config.load(CONFIGS[name]))
    assert report.exit_code == 0, [r.line() for r in report.failed]
    assert report.counts()["PASS"] > 0


def test_declared_departures_pass_with_a_warning_that_shows_the_reason():
    r = by_name(gates.check(config.load(CONFIGS["lora"])))["table.training.learning_rate"]
    assert r.status == "WARN" and "LoRA adapter needs a larger step" in r.detail
    smoke = gates.check(config.load(CONFIGS["cpu-smoke"]))
    warned = {r.check for r in smoke.results if r.status == "WARN"}
    assert {"batch", "completion-length", "table.executor.model"} <= warned


def _set(data, dotted, value):
    *path, last = dotted.split(".")
    node = data
    for part in path:
        node = node.setdefault(part, {})
    if value is DELETE:
        node.pop(last, None)
    else:
        node[last] = value
    return data


DELETE = object()

# (mutation of the paper config, the check that must fail, its gate): each reproduces a
# documented failure of the reference reproduction, or a departure from Table 4.
MUTATIONS = [
    ({"training.learning_rate": 1e-5}, "table.training.learning_rate", 1),
    ({"training.per_device_train_batch_size": 2}, "batch", 1),  # the declared 4 prompts per step went stale
    ({"compute.num_processes": 8}, "batch", 1),
    ({"training.gradient_accumulation_steps": 4}, "batch", 1),
    ({"divergences.prompts_per_step": DELETE}, "batch", 1),  # Table 4's 32 prompts, undeclared
    ({"executor.temperature": DELETE}, "table.executor.temperature", 1),  # vLLM's T 1.0, not the card's 0.6
    ({"executor.top_p": 1.0}, "table.executor.top_p", 1),
    ({"executor.top_k": DELETE}, "table.executor.top_k", 1),
    ({"judge.temperature": 1.0}, "table.judge.temperature", 1),
    ({"training.beta": 0.0}, "table.training.beta", 1),
    ({"training.num_generations": 4}, "table.training.num_generations", 1),
    ({"training.temperature": 0.7}, "table.training.temperature", 1),
    ({"training.max_steps": 100}, "table.training.max_steps", 1),
    ({"training.group_size": 5}, "table.training.group_size", 1),
    ({"training.max_prompt_length": 8192}, "table.training.max_prompt_length", 1),
    ({"training.format_warmup_steps": 20}, "table.training.format_warmup_steps", 1),  # a supervised stage first
    ({"retrieval.top_k": 3}, "table.retrieval.top_k", 1),
    ({"env.max_steps": 10}, "table.env.max_steps", 1),  # a default of 10 biased long tasks low
    ({"executor.history_length": 1}, "table.executor.history_length", 1),
    ({"executor.model": "Qwen/Qwen3-4B"}, "table.executor.model", 1),
    ({"judge.model": "Qwen/Qwen3-8B"}, "table.judge.model", 1),
    ({"reward.lambda_fc": 0.5}, "table.reward.lambda_fc", 1),
    ({"reward.lambda_comp": 0.5}, "table.reward.lambda_comp", 1),
    ({"training.max_completion_length": 4096}, "completion-length", 1),  # ~3 of 10 positions
    ({"training.max_completion_length": DELETE}, "completion-length", 3),
    ({"training.generation_batch_size": DELETE}, "generation-batch", 1),
    ({"training.generation_batch_size": 30}, "generation-batch", 1),
    ({"training.loss_type": DELETE}, "loss-type", 1),
    ({"training.loss_type": "dapo"}, "loss-type", 1),
    ({"training.lr_scheduler_type": "linear"}, "lr-scheduler", 1),
    ({"training.save_steps": 100}, "save-steps", 1),
    ({"training.save_steps": 30, "compute.step_minutes": 30.0}, "save-steps", 1),
    ({"training.save_total_limit": 2}, "save-total-limit", 1),  # rotation deleted checkpoints
    ({"executor.reasoning_effort": "none"}, "executor-reasoning", 1),
    ({"executor.max_tokens": 2048}, "executor-max-tokens", 1),
    ({"judge.backend": DELETE}, "judge", 2),
    ({"judge.max_tokens": 64}, "judge", 2),
    ({"eval.max_error_rate": 0.1}, "error-budget", 2),  # an outage became the top result
    ({"eval.control.max_age_days": 70}, "control-age", 4),  # a ten-week-old baseline
    ({"experiment.fixes_failure": 99, "experiment.fix_metric": "success_rate",
      "experiment.before_run": 1}, "fix", 6),
    ({"compute.watchdog": False}, "watchdog", 7),
    ({"reference": DELETE}, "reference", 1),
    ({"reference": "skillos-paper/alfworlds"}, "reference", 1),
    ({"divergences.training.learning_rate": {"value": 1e-5, "reason": "stale"}},
     "table.training.learning_rate", 1),  # declared 1e-5, config still says 1e-6... and differs
    ({"divergences.training.learing_rate": {"value": 1e-6, "reason": "typo"}}, "divergences", 1),
]


@pytest.mark.parametrize("mutation, check_name, gate", MUTATIONS,
                         ids=[m[1] + ":" + ",".join(m[0]) for m in MUTATIONS])
def test_each_documented_failure_is_refused_with_its_gate_named(mutation, check_name, gate):
    data = raw("paper")
    for key, value in mutation.items():
        if key.startswith("divergences.") and value is DELETE:
            data.setdefault("divergences", {}).pop(key.split(".", 1)[1])
        elif key.startswith("divergences."):
            data.setdefault("divergences", {})[key.split(".", 1)[1]] = value
            if "stale" in str(value):
                data["training"]["learning_rate"] = 2e-5  # the declaration no longer matches
        else:
            _set(data, key, value)
    report = check(data)
    failed = {r.check: r for r in report.failed}
    assert report.exit_code == 1
    assert check_name in failed, [r.line() for r in report.failed]
    assert gate in failed[check_name].gates
    line = failed[check_name].line()
    assert line.startswith("FAIL") and f"gate {','.join(map(str, failed[check_name].gates))}" in line


def test_deepspeed_accumulation_must_match_the_trainer(tmp_path):
    data = raw("paper")
    name = data["compute"]["deepspeed_config"]
    ds = json.loads((ROOT / "training" / "configs" / name).read_text())
    ds["gradient_accumulation_steps"] = 4
    (tmp_path / name).write_text(json.dumps(ds))
    report = check(data, source=tmp_path / "c.yaml")
    r = by_name(report)["deepspeed-accumulation"]
    assert r.status == "FAIL" and r.seen == 4 and r.expected == 8
    (tmp_path / name).write_text("{not json")
    assert by_name(check(data, source=tmp_path / "c.yaml"))["deepspeed-accumulation"].status == "FAIL"
    ds["gradient_accumulation_steps"] = 8
    (tmp_path / name).write_text(json.dumps(ds))
    assert by_name(check(data, source=tmp_path / "c.yaml"))["deepspeed-accumulation"].status == "PASS"


def test_resume_checkpoint_save_steps_must_agree(tmp_path):
    ckpt = tmp_path / "checkpoint-10"
    ckpt.mkdir()
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 10, "save_steps": 10}))
    data = _set(raw("paper"), "training.resume_from_checkpoint", str(ckpt))
    r = by_name(check(data))["resume-save-steps"]
    assert r.status == "FAIL" and r.expected == 10 and r.seen == 5
    _set(data, "training.save_steps", 10)
    _set(data, "training.save_total_limit", None)
    assert by_name(check(data))["resume-save-steps"].status == "PASS"
    _set(data, "training.resume_from_checkpoint", str(tmp_path / "missing"))
    assert by_name(check(data))["resume-save-steps"].status == "FAIL"


def test_save_steps_against_the_measured_step_time():
    data = _set(raw("paper"), "compute.step_minutes", 10.0)
    assert by_name(check(data))["save-steps"].status == "PASS"  # 5 steps x 10 min = 50 <= 60
    _set(data, "compute.step_minutes", 20.0)
    r = by_name(check(data))["save-steps"]
    assert r.status == "FAIL" and "100 min between checkpoints" in r.detail


def test_mde_warns_with_the_n_needed():
    data = _set(raw("quickstart"), "env.n_games", 20)
    r = by_name(check(data, source=CONFIGS["quickstart"]))["mde"]
    assert r.status == "WARN" and "59 paired games are needed" in r.detail
    assert by_name(gates.check(config.load(CONFIGS["quickstart"])))["mde"].status == "PASS"


def test_a_fix_run_is_checked_against_the_ledger():
    from skillos.ledger import Ledger

    with Ledger() as ledger:
        fid = ledger.add_failure("executor defaults to 10 steps", "harness-bug")
        exp = ledger.add_experiment("before")
        run = ledger.start_run(exp, "no_memory")
        data = raw("quickstart")
        data["experiment"].update(fixes_failure=fid, fix_metric="success_rate", before_run=run)
        r = by_name(check(data, source=CONFIGS["quickstart"], ledger=ledger))["fix"]
        assert r.status == "FAIL" and f"run #{run} has no valid eval" in r.detail
        ledger.add_eval(run, "no_memory", {"attempted": 1, "measured": 1, "unmeasured": 0,
                                           "successes": 1, "coerced_actions": 0, "actions": 3},
                        None, None)
        assert by_name(check(data, source=CONFIGS["quickstart"], ledger=ledger))["fix"].status == "PASS"
    data = _set(raw("quickstart"), "experiment.name", "fix-executor-steps")
    assert by_name(check(data, source=CONFIGS["quickstart"]))["fix"].status == "WARN"


def test_static_checks_import_nothing_heavy(canaries_passed):
    code = ("import sys; from skillos import config, gates; "
            f"r = gates.check(config.load({str(CONFIGS['paper'])!r})); "
            "print(r.exit_code, sorted(m for m in ('torch', 'transformers', 'trl', 'alfworld', "
            "'textworld', 'statsmodels') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split(None, 1) == ["0", "[]\n"], out.stderr


def test_gate_check_cli_exit_codes_and_json(tmp_path, canaries_passed):
    result = run_cli("gate", "check", CONFIGS["paper"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS gate 1   table.training.learning_rate" in result.stdout
    bad = _set(raw("paper"), "training.learning_rate", 1e-5)
    _set(bad, "compute.deepspeed_config", str(ROOT / "training" / "configs" / "zero3-offload.json"))
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    result = run_cli("gate", "check", path, "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    failed = [r for r in data["results"] if r["status"] == "FAIL"]
    assert [(r["check"], r["gates"], r["key"], r["seen"], r["expected"]) for r in failed] == [
        ("table.training.learning_rate", [1], "training.learning_rate", 1e-5, 1e-6)]
    assert failed[0]["incident"] and data["exit_code"] == 1
    path.write_text("training: [unclosed\n")
    result = run_cli("gate", "check", path)
    assert result.returncode == 2 and "invalid YAML" in result.stderr and "Traceback" not in result.stderr


def test_plan_says_the_free_checks_missing_data_and_checkpoint_disk(tmp_path, monkeypatch):
    """This machine's facts that cost nothing run in `plan` (and every launch), not only in the
    dry-run: the paper config's official ALFWorld data and the disk its kept checkpoints need."""
    paper = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"
    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    assert not {"data-present", "disk"} & {r.check for r in gates.check(config.load(paper)).results}  # the config alone
    free = {(r.check, r.status) for r in gates.check(config.load(paper), machine=True).results}
    assert ("data-present", "FAIL") in free and ("disk", "FAIL") in free  # 1.25 TB of checkpoints
    (row,) = [r for r in gates.check(config.load(paper), machine=True).results if r.check == "disk"]
    assert "checkpoints x" in row.expected and "GiB" in row.seen
    monkeypatch.setenv("ALFWORLD_DATA", str(tmp_path))  # set, but without the official layout
    (held, train) = [r for r in gates.check(config.load(paper), machine=True).results if r.check == "data-present"]
    assert held.status == "FAIL" and "json_2.1.1/valid_unseen" in held.detail
    for split in ("valid_unseen", "train"):
        (tmp_path / "json_2.1.1" / split).mkdir(parents=True)
    assert {r.status for r in gates.check(config.load(paper), machine=True).results
            if r.check == "data-present"} == {"PASS"}
    planned = run_cli("plan", paper, env={"ALFWORLD_DATA": ""})
    assert "data-present" in planned.stdout + planned.stderr and "disk" in planned.stdout + planned.stderr


def test_gate_check_prints_its_rows_and_says_what_this_machine_lacks_apart_from_a_refusal(tmp_path):
    """Data missing on this machine: --json still prints every row, `missing` says what, and the
    exit code is 3 (not judged), apart from 1 (refused) and 2 (an unreadable config)."""
    import json

    from conftest import ROOT, run_cli

    config = ROOT / "evals" / "configs" / "quickstart.yaml"
    lacking = run_cli("gate", "check", config, "--set", "env.data=official", "--dry-run", "--json",
                      env={"ALFWORLD_DATA": "", "SKILLOS_HOME": str(tmp_path)})
    assert lacking.returncode == 3, lacking.stderr[-500:]
    report = json.loads(lacking.stdout)
    assert report["exit_code"] == 3 and "ALFWORLD_DATA is not set" in report["missing"]
    failed = [r for r in report["results"] if r["status"] == "FAIL"]
    assert failed and all(r["machine"] or r["detail"].startswith("cannot run:") for r in failed)
    assert any(r["status"] == "PASS" for r in report["results"])
    refused = run_cli("gate", "check", config, "--set", "env.data=official", "--set", "retrieval.top_k=0", "--dry-run",
                      "--json", env={"ALFWORLD_DATA": "", "SKILLOS_HOME": str(tmp_path)})
    assert refused.returncode == 1  # a check the config fails outranks what the machine lacks
    assert json.loads(refused.stdout)["missing"] and "table.retrieval.top_k" in refused.stdout
    unreadable = run_cli("gate", "check", tmp_path / "nope.yaml", "--json")
    assert unreadable.returncode == 2 and unreadable.stdout == ""


def test_gate_check_is_quiet_about_skips_unless_asked(tmp_path):
    """The SKIP rows are counted in the summary, printed with --verbose, and always in --json."""
    import json

    from conftest import ROOT, run_cli

    config, env = ROOT / "evals" / "configs" / "quickstart.yaml", {"SKILLOS_HOME": str(tmp_path)}
    quiet = run_cli("gate", "check", config, env=env)
    loud = run_cli("gate", "check", config, "--verbose", env=env)
    skips = json.loads(run_cli("gate", "check", config, "--json", env=env).stdout)["counts"]["SKIP"]
    assert quiet.returncode == loud.returncode == 0 and skips > 10
    assert not [line for line in quiet.stdout.splitlines() if line.startswith("SKIP")]
    assert len([line for line in loud.stdout.splitlines() if line.startswith("SKIP")]) == skips
    assert f"{skips} skip" in quiet.stdout.splitlines()[-1]


def test_the_gates_mde_is_labelled_planned_and_a_sleep_night_quotes_none_for_env_n_games():
    """The gate's MDE is the planned one (before the run, from an assumed discordance), labelled so
    beside the report's observed one; a sleep night's held-out tasks are mined, so env.n_games's MDE
    is not quoted for it."""
    from skillos import config, gates

    cfg = config.from_dict({})
    mde = next(r for r in gates.check(cfg).results if r.check == "mde")
    assert "planned MDE (before the run) at" in mde.detail
    night = next(r for r in gates.check(cfg, command="sleep night").results if r.check == "mde")
    assert night.status == "SKIP" and "mined" in night.detail
