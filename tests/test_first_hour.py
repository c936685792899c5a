"""Progress on every long phase (class 7 of issue 24) and a first-time user's hour (class 8):
plain progress lines per 10% or per 10 s (sleep night phases, the warm-up, view --export, watch,
game generation), tables not cut at 80 columns in a pipe, a shipped example night that runs
offline in under 3 minutes, postmortems that list fixes and their verification, fixes only on
measured metrics, the numeric MDE in `gate check --json`, a cron line with `%` escaped, and
records of a newer schema refused in one line."""

import json
import time

import pytest

from conftest import ROOT, run_cli
from skillos.safety import Ticker

EXAMPLE = ROOT / "training" / "configs" / "sleep-example" / "night.yaml"
QUICKSTART = ROOT / "evals" / "configs" / "reasoning-quickstart.yaml"


# -- progress ------------------------------------------------------------------------------------
@pytest.mark.parametrize("total", [1, 3, 10, 57, 1000])
def test_a_phase_prints_a_line_per_tenth_and_the_last(total):
    lines, now = [], [0.0]
    tick = Ticker(lines.append, "phase", total, clock=lambda: now[0])
    for done in range(total + 1):
        tick(done)
        now[0] += 20.0 / total  # a 20-second phase: a tenth every 2 s
    shown = [int(line.split(": ")[1].split("/")[0]) for line in lines]
    assert shown[0] == 0 and shown[-1] == total and len(lines) <= 12
    gaps = [b - a for a, b in zip(shown, shown[1:])]
    assert max(gaps) <= max(1, total // 10) + 1


@pytest.mark.parametrize("total", [4, 17, 1000])
def test_a_phase_over_within_a_second_prints_its_first_line_and_its_last(total):
    lines, now = [], [0.0]
    tick = Ticker(lines.append, "quick", total, clock=lambda: now[0])
    for done in range(total + 1):
        tick(done)
        now[0] += 0.5 / total
    assert [line.split(" · ")[0] for line in lines] == ["quick: 0/" + str(total), f"quick: {total}/{total}"]


@pytest.mark.parametrize("seconds_per_item", [3.0, 11.0, 60.0])
def test_a_slow_phase_prints_a_line_at_least_every_10_s(seconds_per_item):
    lines, now = [], [0.0]
    tick = Ticker(lambda line: lines.append((now[0], line)), "slow", 1000, clock=lambda: now[0])
    for done in range(30):
        tick(done)
        now[0] += seconds_per_item
    times = [t for t, _ in lines]
    assert all(b - a <= 10.0 + seconds_per_item + 1e-9 for a, b in zip(times, times[1:]))  # the next call after 10 s
    assert len(lines) >= len(times) >= (29 * seconds_per_item) // (10.0 + seconds_per_item)


def test_the_shipped_example_night_runs_offline_with_progress_in_under_3_minutes(tmp_path):
    env = {"SKILLOS_HOME": str(tmp_path / "home"), "OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": ""}
    plan = run_cli("sleep", "night", EXAMPLE, "--dry-run", "--json", env=env, cwd=tmp_path)
    assert plan.returncode == 0, plan.stderr[-1500:]
    assert json.loads(plan.stdout)["tasks"]["test"] >= 1
    start = time.monotonic()
    result = run_cli("sleep", "night", EXAMPLE, "--json", env=env, cwd=tmp_path)
    elapsed = time.monotonic() - start
    assert result.returncode == 0, result.stderr[-2000:]
    assert elapsed < 180, elapsed
    report = json.loads(result.stdout)
    assert report["status"] == "finished" and report["accepted"] >= 1 and report["proposal"]
    err = result.stderr
    for phase in ("harvest: transcript files read", "mine: ", "incumbent-validation: tasks replayed",
                  "incumbent-copy: tasks replayed", "A/A calibration", "train-0: tasks replayed",
                  "candidate-0: tasks replayed", "seed-test: tasks replayed", "best-test: tasks replayed"):
        assert phase in err, phase
    assert "\x1b[" not in err and "\r" not in err  # plain lines off a terminal
    progress = [line for line in err.splitlines() if ": tasks replayed: " in line or ": transcript files read" in line]
    phases = {line.split(": ")[0] for line in progress}
    assert len(progress) <= 2 * len(phases) + int(elapsed / 10) * 2, progress  # first and last, then per 10 s
    live = (ROOT / "training" / "configs" / "sleep-example" / "release-notes" / "SKILL.md").read_text()
    assert "skillos-sleep:learned" not in live  # the live skill is never written by a night


def test_view_export_and_watch_say_how_far_they_are(tmp_path):
    from skillos.ledger.watchdog import Watchdog, WatchConfig
    from skillos.view import export_site

    lines = []
    (tmp_path / "runs" / "r").mkdir(parents=True)
    (tmp_path / "runs" / "r" / "games.jsonl").write_text(
        "".join(json.dumps({"arm": "a", "game_id": f"g{i}", "success": True}) + "\n" for i in range(30)))
    export_site(tmp_path / "site", tmp_path / "home", tmp_path / "runs", echo=lines.append)
    assert lines[0].startswith("view --export: pages written: 0/") and lines[-1].split(": ")[2].split(" ")[0].split("/")[0] \
        == lines[-1].split(": ")[2].split(" ")[0].split("/")[1]
    said, slept = [], []
    dog = Watchdog(WatchConfig([], [str(tmp_path / "runs")], 15, 10, 10, 0), echo=said.append)
    dog.run(interval_s=35, max_ticks=2, sleep=slept.append)
    assert max(slept) <= 10 and sum(slept) == pytest.approx(35)
    assert sum(line.startswith("watch: look") for line in said) == 2
    assert sum(line.startswith("watch: next look in") for line in said) == 3


@pytest.mark.slow  # builds the tiny model and trains it: ~30 s on 2 shared cores
def test_the_warm_up_says_how_far_it_is(tmp_path):
    pytest.importorskip("transformers")
    from skillos.evals.curation import TOOL_SURFACES
    from skillos.training.common.warmup import curator_examples, warm_up

    lines = []
    warm_up("tiny-qwen2", curator_examples()[:2], TOOL_SURFACES["curate_and_advance"], tmp_path / "w", steps=12,
            echo=lines.append)
    assert lines[0].startswith("warm-up: supervised steps: 0/12") and lines[-1].startswith("warm-up: supervised steps: 12/12")
    assert "loss" in lines[-1]


def test_tables_are_not_cut_at_80_columns_in_a_pipe(tmp_path):
    result = run_cli("eval", QUICKSTART, "--n-games", 6, "--n-train-games", 6, "--out", tmp_path / "r",
                     "--set", "experiment.name=a-rather-long-experiment-name-that-a-table-should-not-cut-short",
                     env={"SKILLOS_HOME": str(tmp_path / "home"), "COLUMNS": ""})
    assert result.returncode == 0, result.stderr[-2000:]
    text = result.stdout + result.stderr
    assert "…" not in text and "a-rather-long-experiment-name-that-a-table-should-not-cut-short" in text
    assert max(len(line) for line in text.splitlines()) > 80


# -- the first hour ------------------------------------------------------------------------------
def test_postmortems_list_fixes_and_their_verification(tmp_path):
    from skillos.ledger import Ledger
    from skillos.ledger.postmortem import postmortem

    with Ledger(tmp_path / "ledger.db") as ledger:
        exp = ledger.add_experiment("q")
        run = ledger.start_run(exp, "closed_loop")
        f1 = ledger.add_failure("titles typed as commands", "harness-bug", experiment_id=exp)
        f2 = ledger.add_failure("a stale control", "process", experiment_id=exp)
        x1 = ledger.add_fix(f1, "strip titles", "success_rate", "up", 0.1, before_run_id=run)
        ledger.add_fix(f2, "rerun the control", "success_rate", "up", None, before_run_id=run)
        ledger.record_fix_verdict(x1, run, True, "success_rate 0.40 -> 0.60")
        text = postmortem(ledger, exp)
    section = text.split("## Fixes and their verification")[1].split("##")[0]
    assert f"fix #{x1} for failure #{f1}: strip titles" in section and "**verified**: success_rate 0.40 -> 0.60" in section
    assert "rerun the control" in section and "**not verified yet**" in section
    assert "has not been verified (skillos ledger verify-fix" in text


@pytest.mark.parametrize("metric", ["success", "latency", "reward", "vibes", ""])
def test_a_fix_must_name_a_measured_metric(tmp_path, metric):
    home = tmp_path / "home"
    from skillos.ledger import Ledger

    with Ledger(home / "ledger.db") as ledger:
        run = ledger.start_run(ledger.add_experiment("q"), "a")
        failure = ledger.add_failure("x", "process")
    result = run_cli("ledger", "fixes", "add", "--failure", failure, "--description", "d", "--metric", metric,
                     "--before", run, env={"SKILLOS_HOME": str(home)})
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "measured metrics: success_rate" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_gate_check_json_carries_the_numeric_mde():
    result = run_cli("gate", "check", ROOT / "evals" / "configs" / "quickstart.yaml", "--json")
    data = json.loads(result.stdout)
    mde = data["mde"]
    assert isinstance(mde["mde"], float) and 0 < mde["mde"] < 1 and mde["n"] == 60
    assert next(r for r in data["results"] if r["check"] == "mde")["values"]["mde"] == mde["mde"]


@pytest.mark.parametrize("folder", ["100%done", "a%b%c", "%d-%m"])
def test_a_cron_line_escapes_percent_signs(tmp_path, folder):
    where = tmp_path / folder
    where.mkdir()
    config = where / "night.yaml"
    config.write_text(EXAMPLE.read_text())
    result = run_cli("sleep", "schedule", config, "--json", cwd=where, env={"SKILLOS_HOME": str(where / "home")})
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stdout)["cron"]
    command = line.split(" ", 5)[5]
    assert "%" in command and all(command[i - 1] == "\\" for i, c in enumerate(command) if c == "%")


@pytest.mark.parametrize("version", [3, 99, "1", -1])
def test_a_record_of_another_schema_is_refused_in_one_line(tmp_path, version):
    out = tmp_path / "run"
    first = run_cli("eval", QUICKSTART, "--n-games", 6, "--n-train-games", 6, "--out", out,
                    env={"SKILLOS_HOME": str(tmp_path / "home")}) if version == 3 else None
    if first is not None:
        assert first.returncode == 0, first.stderr[-1500:]
        (out / "report.json").unlink()  # killed before its report: a resume reads the rows
        rows = (out / "games.jsonl").read_text().splitlines()
    else:
        out.mkdir()
        (out / "config.yaml").write_text("x: 1\n")
        rows = [json.dumps({"arm": "no_memory", "game_id": "g1", "success": True})]
    rows[0] = json.dumps({**json.loads(rows[0]), "schema_version": version})
    (out / "games.jsonl").write_text("\n".join(rows) + "\n")
    from skillos.errors import SkillosError
    from skillos.evals.records import read_game_rows

    with pytest.raises(SkillosError) as err:
        read_game_rows(out / "games.jsonl")
    assert "schema_version" in str(err.value) and "\n" not in str(err.value)
    if first is not None:
        result = run_cli("eval", QUICKSTART, "--n-games", 6, "--n-train-games", 6, "--out", out, "--resume",
                         env={"SKILLOS_HOME": str(tmp_path / "home")})
        assert result.returncode == 2 and "newer than this skillos reads" in result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_skillos_says_its_version():
    from conftest import run_cli

    import skillos

    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"skillos {skillos.__version__}"
    assert skillos.__version__ != "0+unknown"


@pytest.mark.alfworld
def test_a_dry_run_with_a_model_executor_says_what_it_plays_and_how_long_it_can_take(game_cache, monkeypatch):
    import yaml

    from llm_server import ScriptedLLM
    from skillos import gates
    from skillos.config.loading import from_dict
    from skillos.gates import dryrun

    now = [0.0]

    def slow_clock():  # read at an action's start and end: every action "takes" 2 s
        now[0] += 2.0
        return now[0]

    monkeypatch.setattr(dryrun, "_clock", slow_clock)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    data = yaml.safe_load((ROOT / "evals" / "configs" / "quickstart.yaml").read_text())
    data.pop("divergences")
    data["env"].update(n_games=4, n_train_games=0, max_steps=30)
    data["eval"]["workers"] = 1
    lines = []
    with ScriptedLLM() as server:
        data["executor"] = {"backend": "openai", "model": "m", "base_url": server.openai_url, "history_length": 3,
                            "timeout_s": 5.0, "max_tokens": 16}
        gates.check(from_dict(data), dry_run=True, progress=lines.append, echo=lambda _: None)
        calls = len(server.calls)
    said = "\n".join(lines)
    assert "dry run: 3 real games of up to 30 actions with openai:m; building the executor first" in said
    assert "dry run: the first action took 2.0 s; up to 89 more (games x env.max_steps): at most ~3 min" in said
    counted = [line for line in lines if "dry run: executor actions: " in line]
    assert counted and int(counted[-1].split(": ")[2].split("/")[0]) == calls  # each model call counted
    quick = []
    gates.check(from_dict({**data, "executor": {"backend": "heuristic"}}), dry_run=True, progress=quick.append,
                echo=lambda _: None)
    assert not any("dry run:" in line for line in quick)  # no model: nothing to wait for, nothing said
