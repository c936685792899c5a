"""skillos doctor: every readiness check with its fix, a config's backends checked through the
real SDKs against the local test server (answering, down, no key, model not listed), and a
ledger that cannot be written."""

import json

import yaml
from llm_server import ScriptedLLM
from typer.testing import CliRunner

from conftest import ROOT
from skillos import cli


def doctor(*args, env=None):
    """In-process (torch imports once for the whole file); env is set for the call only."""
    result = CliRunner().invoke(cli.app, ["doctor", "--json", *map(str, args)], env=env)
    result.returncode = result.exit_code
    return result, json.loads(result.stdout)


def checks_of(report):
    return {c["name"]: c for c in report["checks"]}


def test_doctor_reports_every_part_with_what_to_do():
    result, report = doctor()
    checks = checks_of(report)
    for name in ("python", "package alfworld", "package torch", "package modal", "alfworld engine", "ledger",
                 "disk", "gpu", "npx"):
        assert name in checks, name
    assert checks["ledger"]["status"] == "ok" and checks["alfworld engine"]["status"] == "ok"
    assert all(c["fix"] for c in report["checks"] if c["status"] != "ok")  # nothing without a remedy
    assert result.returncode == (0 if report["ready"] else 1)


def config_with(tmp_path, url, model="Qwen3-8B", key_env="OPENAI_API_KEY"):
    data = yaml.safe_load((ROOT / "evals" / "configs" / "quickstart.yaml").read_text())
    data.pop("divergences", None)
    data["executor"] = {"backend": "openai", "model": model, "base_url": url, "api_key_env": key_env}
    data["judge"] = {"backend": "anthropic", "model": "claude-test", "base_url": url.removesuffix("/v1"),
                     "api_key_env": "ANTHROPIC_API_KEY"}
    path = tmp_path / f"c-{model}-{key_env}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_doctor_checks_a_configs_backends_through_the_sdks(tmp_path):
    keys = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}
    with ScriptedLLM() as server:
        result, report = doctor("--config", config_with(tmp_path, server.openai_url), env=keys)
        checks = checks_of(report)
        assert checks["executor backend openai"]["status"] == "ok", checks["executor backend openai"]
        assert "'Qwen3-8B' among them" in checks["executor backend openai"]["detail"]
        assert checks["judge backend anthropic"]["status"] == "ok", checks["judge backend anthropic"]
        _, report = doctor("--config", config_with(tmp_path, server.openai_url, model="gpt-nope"), env=keys)
        assert "'gpt-nope' not among them" in checks_of(report)["executor backend openai"]["detail"]
        _, report = doctor("--config", config_with(tmp_path, server.openai_url, key_env="NO_SUCH_KEY"), env=keys)
        missing = checks_of(report)["executor backend openai"]
        assert missing["status"] == "fail" and missing["fix"].startswith("export NO_SUCH_KEY=")
        port = server.server.server_port
    result, report = doctor("--config", config_with(tmp_path, f"http://127.0.0.1:{port}/v1"), env=keys)  # now down
    down = checks_of(report)["executor backend openai"]
    assert result.returncode == 1 and down["status"] == "fail" and "did not answer" in down["detail"]


def test_an_unwritable_ledger_is_a_failure_with_its_fix(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    result, report = doctor(env={"SKILLOS_HOME": str(blocker)})
    ledger = checks_of(report)["ledger"]
    assert result.returncode == 1 and ledger["status"] == "fail" and "SKILLOS_HOME" in ledger["fix"]
