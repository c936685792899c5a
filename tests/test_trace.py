"""`skillos gate check --trace`: every key a gate approves reaches the object it configures.
Shipped configs: every gated key applied. Mutations: changing a gated key changes what its
consumer receives. A key checked but not applied (the max_prompt_length TRL 1.16 dropped) FAILs."""

import json

import pytest

from conftest import ROOT, run_cli
from skillos import config, gates

SHIPPED = sorted(p for p in [*(ROOT / "training" / "configs").glob("*.yaml"), *(ROOT / "evals" / "configs").glob("*.yaml")]
                 if not p.name.endswith(".spec.yaml"))  # a frozen eval spec is pins, not a config
PAPER = ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"
SELECTOR = ROOT / "training" / "configs" / "selector-gpu-clean-oracle.yaml"

# A value each string key can be changed to (still a valid config)
OTHER = {"on": "none", "Qwen/Qwen3-8B": "Qwen/Qwen3-4B", "Qwen/Qwen3-32B": "Qwen/Qwen3-14B", "grpo": "dr_grpo",
         "constant": "cosine", "no_memory": "closed_loop", "valid_unseen": "valid_seen", "bm25": "shuffled",
         "clean-oracle": "first-oracle", "admissible": "generate", "mean": "sum"}
FIXED = {"reference", "skillgate.trainer", "skillgate.slate_repo", "skillgate.eval_spec", "compute.num_processes",
         "prompts_per_step", "completions_per_step",  # what the gated set itself depends on; tested apart
         "training.async_rollouts"}  # needs max_staleness and one process beside it: tests/test_async_rollouts.py


def mutate(key: str, value):
    """Another valid value for a gated key, or None when it has none here."""
    if key in FIXED or value is None:
        return None
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return OTHER.get(value)
    leaf = key.rsplit(".", 1)[-1]
    if isinstance(value, int):
        if leaf in ("num_generations", "max_prompt_length"):
            return value // 2
        if leaf in ("group_size", "min_group_size", "history_length", "max_steps", "top_k", "n_games",
                    "save_steps"):
            return value - 1 if value > 2 else value + 1
        return value * 2
    return value * 0.5


def trace(cfg, command=None) -> dict:
    report = gates.check(cfg, trace=True, command=command)
    return {row.key: row for row in report.trace}, report


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_gated_key_of_a_shipped_config_reaches_its_consumer(path):
    rows, report = trace(config.load(path))
    assert rows, "nothing traced"
    unapplied = [row.line() for row in rows.values() if row.applied is not True]
    assert not unapplied, unapplied
    assert not [r for r in report.failed if r.check == "trace"]


def test_the_paper_configs_decoding_arrives_at_its_servers_and_the_vllm_sampling_call():
    rows, _ = trace(config.load(PAPER))  # the executor and the judge on `vllm serve`: the request body
    for key, value in (("executor.temperature", 0.6), ("executor.top_p", 0.95), ("executor.top_k", 20),
                       ("executor.max_tokens", 8192), ("judge.temperature", 0.6)):
        assert rows[key].arrived == value and "POST /chat/completions body" in rows[key].consumer, rows[key].line()
    assert rows["executor.reasoning_effort"].arrived == "on"
    assert "enable_thinking': True" in rows["executor.reasoning_effort"].consumer
    local, _ = trace(config.load(PAPER, sets=["executor.backend=vllm", "executor.base_url=null",
                                              "compute.servers={judge: {gpus: 2}}"]))
    assert local["executor.top_k"].arrived == 20 and "SamplingParams" in local["executor.top_k"].consumer
    assert "enable_thinking': True" in local["executor.reasoning_effort"].consumer
    assert "PromptCap" in rows["training.max_prompt_length"].consumer and rows["training.max_prompt_length"].arrived == 16384


@pytest.mark.parametrize("path", [PAPER, SELECTOR], ids=["paper", "selector"])
def test_changing_a_gated_key_changes_what_its_consumer_receives(path):
    base = config.load(path)
    rows, _ = trace(base)
    tried = 0
    for key, row in rows.items():
        new = mutate(key, row.value)
        if new is None:
            continue
        changed, _ = trace(config.with_sets(base, [f"{key}={json.dumps(new)}"]))
        assert key in changed, f"{key} is no longer traced after {key}={new}"
        got = changed[key]
        assert got.applied is True, got.line()
        assert got.value == new and got.arrived != row.arrived, (row.line(), got.line())
        tried += 1
    assert tried >= (20 if path == PAPER else 10)


@pytest.mark.parametrize("trainer, args_class", [("selector-bc", "SFTConfig"), ("selector-dpo", "DPOConfig")])
def test_the_sft_and_dpo_baselines_trace_to_their_own_arguments(trainer, args_class):
    """A baseline arm: GRPO-only checks do not approve what SFT / DPO never read; what they do read
    arrives (the prompt cap through the rows' prompts, the rest through their arguments)."""
    cfg = config.with_sets(config.load(ROOT / "training" / "configs" / "selector-cpu.yaml"), [
        f"skillgate.trainer={trainer}", "skillgate.selector_credit=off",  # YAML's bare off: the string
        f'divergences={{skillgate.trainer: {{value: {trainer}, reason: "a SkillGate baseline arm"}}, '
        'skillgate.slate_size: {value: 8, reason: "the CPU config\'s 8-skill slates"}}'])
    rows, report = trace(cfg)
    assert report.exit_code == 0, [r.line() for r in report.failed]
    assert all(row.applied for row in rows.values()), [row.line() for row in rows.values() if not row.applied]
    assert rows["training.save_steps"].consumer == f"{args_class}.save_steps"
    from skillos.checking import Context, Result
    from skillos.gates import trace as tracing

    (cap,) = tracing.trace(Context(cfg), [Result("x", (1,), "PASS", "training.max_prompt_length", 1024, 1024)])
    assert cap.applied and "cap_text" in cap.consumer
    assert not {"training.num_generations", "training.loss_type", "training.temperature"} & set(rows)


def test_a_key_checked_but_not_applied_fails(monkeypatch):
    """What TRL 1.16 did to max_prompt_length: the arguments the trainer gets lack it."""
    from skillos.training.common import grpo as trainer

    monkeypatch.setattr(trainer, "NOT_GRPO", trainer.NOT_GRPO | {"max_prompt_length"})
    rows, report = trace(config.load(PAPER))
    assert rows["training.max_prompt_length"].applied is False
    failed = [r for r in report.failed if r.check == "trace"]
    assert any(r.key == "training.max_prompt_length" and "checked but not applied" in r.detail for r in failed)
    assert report.exit_code == 1


def test_a_key_with_no_consumer_fails_and_one_the_trainer_ignores_fails():
    cfg = config.load(PAPER)
    from skillos.checking import Context, Result
    from skillos.gates import trace as tracing

    ctx = Context(cfg)
    rows = tracing.trace(ctx, [Result("made-up", (1,), "PASS", "optimize.max_lines", 40, 40)])
    assert rows[0].applied is False and "no consumer" in rows[0].detail
    # a heuristic executor receives no sampling settings: a temperature set there is not applied
    cfg = config.with_sets(config.load(ROOT / "evals" / "configs" / "quickstart.yaml"), ["executor.temperature=0.6"])
    rows = tracing.trace(Context(cfg), [Result("x", (1,), "PASS", "executor.temperature", 0.6, 0.6)])
    assert rows[0].applied is False and "heuristic" in rows[0].detail


def test_thinking_on_a_template_without_the_switch_is_not_applied(game_cache):
    """reasoning_effort reaches the chat template as enable_thinking; on a model whose template
    ignores it (the tiny model's), the trace says so before the backend refuses it at start."""
    from skillos.evals.backends.tiny_model import build
    from skillos.checking import Context, Result
    from skillos.gates import trace as tracing

    build()
    cfg = config.with_sets(config.load(ROOT / "evals" / "configs" / "quickstart.yaml"),
                           ["executor.backend=hf", "executor.model=tiny-qwen2", "executor.reasoning_effort=on"])
    (row,) = tracing.trace(Context(cfg), [Result("x", (1,), "PASS", "executor.reasoning_effort", "on", "on")])
    assert row.applied is False and "no enable_thinking switch" in row.detail and row.arrived == "on"


def test_the_cli_trace_json_lists_key_value_consumer_applied():
    out = run_cli("gate", "check", ROOT / "evals" / "configs" / "quickstart.yaml", "--trace", "--json")
    assert out.returncode == 0, out.stderr[-2000:]
    rows = json.loads(out.stdout)["trace"]
    assert rows and all({"key", "value", "consumer", "applied", "arrived"} <= set(r) for r in rows)
    assert {r["key"] for r in rows} >= {"retrieval.top_k", "env.max_steps", "eval.max_error_rate"}
    plain = run_cli("gate", "check", ROOT / "evals" / "configs" / "quickstart.yaml", "--json")
    assert "trace" not in json.loads(plain.stdout)  # only when asked (or with the dry-run)
    mutated = run_cli("gate", "check", ROOT / "evals" / "configs" / "quickstart.yaml", "--trace", "--json",
                      "--set", "retrieval.top_k=3", "--set", "divergences={}")
    top_k = next(r for r in json.loads(mutated.stdout)["trace"] if r["key"] == "retrieval.top_k")
    assert top_k["value"] == 3 and top_k["arrived"] == 3 and top_k["applied"] is True


@pytest.mark.slow
@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_mutable_gated_key_of_every_shipped_config(path):
    base = config.load(path)
    rows, _ = trace(base)
    for key, row in rows.items():
        new = mutate(key, row.value)
        if key in ("eval.control", "eval.control.arm") and new not in base.eval.arms:  # the control is an arm of the run
            new = next((arm for arm in base.eval.arms if arm != row.value), None)
        if new is None:
            continue
        changed, _ = trace(config.with_sets(base, [f"{key}={json.dumps(new)}"]))
        assert changed[key].applied is True and changed[key].value == new, changed[key].line()


@pytest.mark.parametrize("env, reaches", [("household", True), ("reasoning", False), ("slate", False)])
def test_history_length_reaches_the_executor_only_where_the_environment_shows_a_history(env, reaches):
    """Each environment says whether its model executor shows a history (Environment.history_unused);
    the trace asks it, so a slate or reasoning run's history_length is reported as reaching no code."""
    from skillos.evals.envs.registry import environment
    from skillos.gates import trace as tracing
    from skillos.checking import Context, Result

    cfg = config.with_sets(config.load(ROOT / "evals" / "configs" / "quickstart.yaml"),
                           [f"env.name={env}", "executor.backend=openai", "executor.model=m", "executor.history_length=3"])
    (row,) = tracing.trace(Context(cfg), [Result("x", (1,), "PASS", "executor.history_length", 3, 3)])
    assert row.applied is reaches
    assert reaches or environment(env).history_unused in row.detail


def test_a_row_says_applied_only_where_the_launch_path_receives_the_value():
    """Each launch path's own consumer: the watchdog started beside the accelerate, local and Modal
    training launches and beside an eval; a DeepSpeed config only an accelerate or Modal launch
    passes on FAILs on a local one; a watchdog turned off is started nowhere."""
    cfg = config.load(PAPER)
    for backend in ("accelerate", "local", "modal"):
        rows, report = trace(config.with_sets(cfg, [f"compute.backend={backend}"]))
        watch = rows["compute.watchdog"]
        assert watch.applied and backend in watch.consumer and "skillos watch" in watch.arrived, watch.line()
        ds = rows["compute.deepspeed_config"]
        if backend == "local":
            assert ds.applied is False and "ignores it" in ds.detail
            assert any(r.key == "compute.deepspeed_config" for r in report.failed if r.check == "trace")
        else:
            assert ds.applied and ds.arrived.endswith("zero3-offload.json"), ds.line()
    off, _ = trace(config.with_sets(cfg, ["compute.watchdog=false"]))
    assert off["compute.watchdog"].applied and off["compute.watchdog"].arrived is None  # off, and nothing started
    quick = config.load(ROOT / "evals" / "configs" / "quickstart.yaml")
    rows, _ = trace(quick)
    assert rows["compute.watchdog"].applied and "skillos.api._watching" in rows["compute.watchdog"].consumer


def test_a_strict_optimize_gate_is_applied_and_trl_invalid_values_fail_at_load():
    from skillos.errors import ConfigError

    optimize = config.load(ROOT / "training" / "configs" / "optimize-quickstart.yaml")
    rows, report = trace(config.with_sets(optimize, ["optimize.gate.mode=strict"]), command="optimize")
    assert rows["optimize.gate.mode"].applied and rows["optimize.gate.mode"].arrived == "strict"
    assert not [r for r in report.failed if r.check == "trace"]
    smoke = ROOT / "training" / "configs" / "cpu-smoke.yaml"
    for sets, says in ((["training.report_to=[tensorboard, none]"], "'none' cannot stand beside"),
                       (["training.report_to=[tensorboard, tensorboard]"], "twice")):
        with pytest.raises(ConfigError, match=says):
            config.load(smoke, sets)
    refused = run_cli("gate", "check", smoke, "--set", "training.report_to=[tensorboard, none]")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "report_to" in refused.stderr


@pytest.mark.parametrize("sets, key", [
    (["compute.num_machines=2"], "compute.num_machines"), (["compute.num_processes=4"], "compute.num_processes"),
    (["compute.vllm_server_gpus=2"], "compute.vllm_server_gpus"), (["compute.backend=modal"], "compute.backend"),
    (["compute.backend=accelerate"], "compute.backend"), (["compute.ray_max_retries=1"], "compute.ray_max_retries"),
    (["compute.main_process_port=29501"], "compute.main_process_port")])
def test_a_launch_key_the_eval_path_ignores_fails_though_no_check_reads_it(sets, key):
    cfg = config.with_sets(config.load(ROOT / "evals" / "configs" / "quickstart.yaml"), sets)
    rows, report = trace(cfg, command="eval")
    assert rows[key].applied is False and ("ignores" in rows[key].detail or "is for" in rows[key].detail), rows[key].line()
    assert any(r.key == key for r in report.failed if r.check == "trace")


def test_the_eval_on_ray_and_a_training_launchs_own_keys_are_applied():
    quick = config.with_sets(config.load(ROOT / "evals" / "configs" / "quickstart.yaml"),
                             ["compute.backend=ray", "compute.ray_max_retries=1", "compute.ray_gpus_per_task=0.5"])
    rows, report = trace(quick, command="eval")
    assert all(rows[k].applied for k in ("compute.backend", "compute.ray_max_retries", "compute.ray_gpus_per_task"))
    rows, _ = trace(quick, command="optimize")  # optimize plays in this process, never on Ray
    assert rows["compute.backend"].applied is False and rows["compute.ray_max_retries"].applied is False
    server, _ = trace(config.load(ROOT / "training" / "configs" / "skillos-paper-alfworld.yaml"))
    assert server["compute.vllm_server_gpus"].applied and "--gpu_ids" in server["compute.vllm_server_gpus"].consumer
