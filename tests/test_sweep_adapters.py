"""Checkpoints as adapters (training/common/serve_adapters.py): `sweep.serve: adapters` plans one vLLM server
with one adapter per LoRA checkpoint, routes each checkpoint arm's curator to its own adapter,
refuses what one server cannot serve with one-line errors, and `--dry-run` prints the server
command, the adapters and the expected wall time. vLLM is never needed here."""

import json

import pytest

from conftest import ROOT, run_cli

QUICKSTART = ROOT / "evals" / "configs" / "quickstart.yaml"


def lora(folder, base="Qwen/Qwen2.5-7B-Instruct", r=16):
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base, "r": r,
                                                            "peft_type": "LORA"}))
    (folder / "adapter_model.safetensors").write_bytes(b"w")
    return folder


def _plan(checkpoints, **sweep):
    from skillos import api, config

    cfg = config.load(QUICKSTART, [f"sweep.{k}={v}" for k, v in {"serve": "adapters", **sweep}.items()])
    return api.sweep(cfg, executor="heuristic", checkpoints=checkpoints, dry_run=True)["plans"]["household"]


def test_the_dry_run_prints_the_server_its_adapters_and_the_wall_time(tmp_path):
    a, b = lora(tmp_path / "checkpoint-10"), lora(tmp_path / "checkpoint-20", r=32)
    done = run_cli("sweep", QUICKSTART, "--checkpoint", a, "--checkpoint", b, "--executor", "heuristic",
                   "--dry-run", "--set", "sweep.serve=adapters", "--set", "compute.executor_latency_s=0.5",
                   "--set", "eval.workers=4")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert (f"vllm serve Qwen/Qwen2.5-7B-Instruct --enable-lora --max-loras 2 --max-lora-rank 32 --host 127.0.0.1 "
            f"--port 8000 --api-key '$SKILLOS_ADAPTER_SERVER_KEY' --lora-modules checkpoint-10={a} "
            f"checkpoint-20={b}") in out
    assert f"curator:checkpoint-10 -> model checkpoint-10 = {a} (r=16)" in out
    # 3 arms (control + 2 checkpoints) on 60 held-out games, the checkpoints also on 60 train games:
    # 300 games x 30 actions + 120 curator requests, 3 arms x 1 game in flight, 0.5 s each
    assert "300 games x <= 30 actions + 120 curator requests = 9120 requests at 0.5 s" in out
    assert "3 in flight" in out and "expected wall time <= 25.3 min" in out
    assert "dry run: nothing was started or played" in out and not (tmp_path / "runs").exists()


def test_each_checkpoint_arm_calls_its_own_adapter_at_the_server(tmp_path):
    from skillos import config
    from skillos.evals.sweep import sweep_config

    cfg = config.load(QUICKSTART, ["sweep.serve=adapters", "sweep.port=8123"])
    swept = sweep_config(cfg, [], "heuristic", [lora(tmp_path / "checkpoint-10"), lora(tmp_path / "checkpoint-20")])
    curators = {arm: config.curator_config(swept, arm) for arm in swept.eval.arms if arm.startswith("curator:")}
    assert {(c.backend, c.model, c.base_url, c.api_key_env) for c in curators.values()} == {
        ("openai", name, "http://127.0.0.1:8123/v1", "SKILLOS_ADAPTER_SERVER_KEY")
        for name in ("checkpoint-10", "checkpoint-20")}
    local = config.curator_config(sweep_config(config.load(QUICKSTART), [], "heuristic", [tmp_path / "checkpoint-10"]),
                                  "curator:checkpoint-10")
    assert local.backend == "hf" and local.model == str(tmp_path / "checkpoint-10")
    assert config.load(QUICKSTART).hash() != cfg.hash()  # served by vLLM adapters: another family


@pytest.mark.parametrize("case, expected", [
    ("full", "full weights (config.json, no adapter_config.json)"),
    ("missing", "no adapter_config.json"),
    ("bases", "the checkpoints name 2 base models"),
    ("max_loras", "sweep.max_loras: 1 is smaller than the 2 checkpoint arms"),
    ("rank", "sweep.max_lora_rank: 8 is below the largest checkpoint rank r=16"),
])
def test_what_one_server_cannot_serve_is_a_one_line_error(tmp_path, case, expected):
    from skillos.errors import SkillosError

    a = lora(tmp_path / "a")
    b = {"full": tmp_path / "b", "missing": tmp_path / "b", "bases": None}.get(case)
    if case == "full":
        b.mkdir()
        (b / "config.json").write_text("{}")
    elif case == "missing":
        b.mkdir()
    else:
        b = lora(tmp_path / "b", base="other/base" if case == "bases" else "Qwen/Qwen2.5-7B-Instruct")
    sweep = {"max_loras": {"max_loras": 1}, "rank": {"max_lora_rank": 8}}.get(case, {})
    with pytest.raises(SkillosError) as refused:
        _plan([a, b], **sweep)
    assert expected in str(refused.value) and "\n" not in str(refused.value)


def test_a_sweep_without_vllm_is_refused_before_any_arm_plays(tmp_path):
    from skillos import api, config
    from skillos.errors import SkillosError

    cfg = config.load(QUICKSTART, ["sweep.serve=adapters"])
    with pytest.raises(SkillosError, match="needs vLLM, on a GPU machine"):
        api.sweep(cfg, executor="heuristic", checkpoints=[lora(tmp_path / "checkpoint-10")], out=tmp_path / "run")
    assert not (tmp_path / "run").exists()
    assert _plan([tmp_path / "checkpoint-10"], base_model="my/base")["server"]["base_model"] == "my/base"
