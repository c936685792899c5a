"""`skillos view` in a real headless Chromium (Debian's chromium + chromium-driver, driven by
selenium with the system driver: nothing is downloaded), on a ledger and runs the quickstart
made: each page shows the numbers its JSON document and report.json say, a game shows its
retrieved skills and steps, an invalidated experiment is marked, a run in progress updates, a
partial JSONL line and a corrupt ledger row are shown as problems. Then the static export opened
from disk, and `skillos export inspect` read back with inspect_ai's read_eval_log."""

import hashlib
import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

import chromium

from conftest import ROOT, run_cli

pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
pytestmark = pytest.mark.alfworld

SHOTS = Path(os.environ.get("SKILLOS_VIEW_SHOTS", "")) if os.environ.get("SKILLOS_VIEW_SHOTS") else None


# -- fixtures ---------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def made(tmp_path_factory, game_cache):
    """One small quickstart (6 + 6 games), then ledger records a person and an agent add: the
    goal, a second experiment invalidated, a failure with a fix, a gate override."""
    root = tmp_path_factory.mktemp("view")
    home, runs = root / "home", root / "runs"
    env = {"SKILLOS_HOME": str(home), "SKILLOS_CACHE": str(game_cache)}
    result = run_cli("quickstart", "--n-games", 6, "--n-train-games", 6, "--out", runs / "q1", "--json",
                     env=env, cwd=root)
    assert result.returncode == 0, result.stderr[-2000:]
    from skillos.ledger import Ledger

    with Ledger(home / "ledger.db") as ledger:
        ledger.set_goal("Curated skills lift a frozen executor on unseen rooms", "person")
        bad = ledger.add_experiment("leaky-split", hypothesis="train and test overlapped")
        ledger.correct("experiments", bad, "invalidate", "held-out games leaked into train")
        fid = ledger.add_failure("curator wrote titles the executor typed as commands", "harness-bug",
                                 modes=["comment-as-behaviour"], experiment_id=1, gate="2")
        ledger.add_fix(fid, "strip titles from skill bodies", "success_rate", "up", 0.1, before_run_id=1)
        ledger.add_override(5, "mde", "a smoke run, not a claim", "person", experiment_id=1)
        canary = _record_canary(ledger)
    return {"root": root, "home": home, "runs": runs, "run": runs / "q1", "canary": canary,
            "report": json.loads((runs / "q1" / "report.json").read_text())}


def _record_canary(ledger) -> dict:
    """A finished canary as `skillos canary` records it: two seeds, both controls, the sealed split."""
    from skillos.training import canary as canaries

    def wins(k, n=20):
        return {f"g{i}": i < k for i in range(n)}

    measured = [canaries.Measured("executor success", wins(4), wins(12), wins(4), flipped_after=wins(1), seed=s)
                for s in (0, 1)]
    result = {**canaries.judged_result(measured, 1), "trainer": "curator", "quick": False, "code_hash": "c0de",
              "held_out": {"split": "sealed", "env_seed": 1000, "games": "abc", "looks": 1}, "wall_s": 60}
    experiment = ledger.find_or_add_experiment("canary-curator", "cfg", hypothesis="curator: training moves it")
    run = ledger.start_run(experiment, "canary", config={"canary": "curator"})
    result["id"] = ledger.add_canary(run, result)
    ledger.end_experiment_run(run, "finished", "canary curator: PASS", experiment_status="measured")
    return {**result, "experiment": experiment}


@pytest.fixture(scope="session")
def server(made):
    proc, url = chromium.view_server(made["home"], made["runs"])
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="session")
def browser():
    driver = chromium.start()
    yield driver
    driver.quit()


api = chromium.api


def open_page(browser, url, route, timeout=20):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{url}#/{route}")
    want = route or "experiments"
    WebDriverWait(browser, timeout).until(
        lambda d: d.find_element("css selector", "body").get_attribute("data-ready") == want)
    return browser


def cells(browser, selector):
    return [[td.text for td in tr.find_elements("css selector", ":scope > td")]
            for tr in browser.find_elements("css selector", selector)]


def cell(row_el, k):
    return row_el.find_element("css selector", f'td[data-k="{k}"]').text


# the page's number formats (app.js pct / pts / pval)
def pct(x):
    return f"{100 * x:.1f}%"


def pts(x):
    return f"{'+' if x >= 0 else '-'}{abs(100 * x):.1f} pts"


def js_precision3(x):
    """JavaScript's Number.toPrecision(3) (for the values a p can take here)."""
    return f"{x:#.3g}"


def files_digest(*roots):
    digest = {}
    for root in roots:
        for path in sorted(Path(root).rglob("*")):
            if path.is_file():
                digest[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def shoot(browser, name, tmp_path):
    path = (SHOTS or tmp_path) / f"{name}.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(path))
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000  # a drawn page, not a blank one
    return path


# -- the run's own record ------------------------------------------------------------------------
def test_trajectories_are_recorded_beside_the_rows(made):
    rows = [json.loads(line) for line in (made["run"] / "games.jsonl").read_text().splitlines()]
    rows += [json.loads(line) for line in (made["run"] / "curation.jsonl").read_text().splitlines()]
    traces = [json.loads(line) for line in (made["run"] / "trajectories.jsonl").read_text().splitlines()]
    by_key = {(t["arm"], t["phase"], t["game_id"]): t for t in traces}
    assert len(by_key) == len(rows) == 18
    for row in rows:
        trace = by_key[(row["arm"], row["phase"], row["game_id"])]
        assert len(trace["steps"]) == row["steps"] and [h["skill"] for h in trace["retrieved"]] == row["skills_retrieved"]
        assert all(s["admissible"] > 0 for s in trace["steps"])
        assert sum(s["coerced"] for s in trace["steps"]) == row["coerced_actions"]
    learning = [t for t in traces if t["arm"] == "closed_loop"]
    assert all(t["curation"] for t in learning) and not any(t["curation"] for t in traces if t["arm"] == "no_memory")
    # the curator's operations replayed game by game end at the repo on disk
    replay = {}
    for trace in sorted(learning, key=lambda t: (t["phase"] != "train", t["game_id"])):
        for op in trace["curation"]:
            if op["markdown"] is None:
                replay.pop(op["skill"], None)
            else:
                replay[op["skill"]] = op["markdown"]
    on_disk = {p.parent.name: p.read_text() for p in (made["run"] / "repo-closed_loop").glob("*/SKILL.md")}
    assert replay == on_disk


# -- the live page --------------------------------------------------------------------------------
def test_experiments_page_marks_the_invalidated_one_and_filters_to_evidence(made, server, browser, tmp_path):
    doc = api(server, "experiments")
    page = open_page(browser, server, "")
    rows = page.find_elements("css selector", "#experiments tbody tr")
    assert [r.get_attribute("data-id") for r in rows] == [str(e["id"]) for e in doc["experiments"]]
    for row, exp in zip(rows, doc["experiments"]):
        assert cell(row, "status") == exp["status"]
        invalid = "invalidated" in row.get_attribute("class")
        assert invalid == (not exp["valid"])
        if invalid:
            assert "invalidated" in cell(row, "flag") and "held-out games leaked into train" in cell(row, "flag")
    assert "Curated skills lift a frozen executor" in page.find_element("css selector", "main").text
    shoot(page, "experiments", tmp_path)
    page.find_element("id", "evidence").click()
    shown = [r.get_attribute("data-id") for r in page.find_elements("css selector", "#experiments tbody tr")]
    assert shown == [str(e["id"]) for e in doc["experiments"] if e["valid"]] and len(shown) < len(doc["experiments"])


def test_experiment_page_shows_denominators_comparisons_gates_and_overrides(made, server, browser):
    report = made["report"]
    doc = api(server, "experiment/1")
    page = open_page(browser, server, "experiment/1")
    assert not page.find_elements("id", "problems"), page.find_element("id", "problems").text
    for row in page.find_elements("css selector", "#runs tbody tr"):
        arm = report["arms"][row.get_attribute("data-arm")]
        assert [cell(row, k) for k in ("attempted", "measured", "unmeasured", "coerced", "won")] == \
            [str(arm[k]) for k in ("attempted", "measured", "unmeasured", "coerced_actions", "successes")]
        run = next(r for r in doc["runs"] if str(r["id"]) == row.get_attribute("data-run"))
        assert cell(row, "fingerprint") == run["executor_fingerprint"] and "executor=heuristic" in run["executor_fingerprint"]
    (comp,) = report["comparisons"]
    row = page.find_element("css selector", '#comparisons tr[data-treatment="closed_loop"]')
    assert cell(row, "bc") == f"{comp['b']} / {comp['c']}"
    assert cell(row, "p") == js_precision3(comp["p_value"])
    assert cell(row, "p_adjusted") == f"{js_precision3(comp['p_adjusted'])} ({report['family_correction']})"
    assert cell(row, "ci") == f"[{pts(comp['ci_low'])}, {pts(comp['ci_high'])}]"
    assert cell(row, "mde") == pts(comp["mde"]).lstrip("+")
    assert cell(row, "difference") == pts(comp["difference"]) and cell(row, "n_paired") == str(comp["n_paired"])
    gates = cells(page, "#gates tbody tr")
    assert len(gates) == len(doc["gate_results"]) > 10
    assert any(g[2] == "WARN" and g[1] == "mde" for g in gates)
    assert "a smoke run, not a claim" in page.find_element("id", "overrides").text
    assert "curator wrote titles" in page.find_element("id", "failures").text
    written = page.find_element("id", "conclusions").text  # the conclusion skillos wrote, its verdict words
    assert "by skillos at" in written and comp["verdict"]["line"] in written


def test_a_canary_shows_its_verdict_seeds_and_controls(made, server, browser):
    canary = made["canary"]
    page = open_page(browser, server, f"experiment/{canary['experiment']}")
    assert not page.find_elements("id", "problems")
    head = page.find_element("id", f"canary-{canary['id']}").text
    assert head == "canary #%d curator: PASS" % canary["id"]
    text = page.find_element("css selector", "main").text
    assert "No report.json (the run has not finished)" not in text and "sealed split (env seed 1000), look 1" in text
    assert canary["rule"]["text"] in text
    seeds = cells(page, ".canary-seeds tbody tr")
    assert [row[0] for row in seeds] == ["0", "1"] and all(row[4] == "up" for row in seeds)
    assert [row[2] for row in seeds] == ["8/0", "8/0"]
    controls = cells(page, ".canary-controls tbody tr")
    assert [row[0] for row in controls] == ["shuffled control", "sign-flipped control"]
    assert controls[1][4] == canary["controls"]["flipped"]["verdict"] == "regression"


def test_run_page_counts_from_the_rows_and_filters_games(made, server, browser):
    report = made["report"]
    page = open_page(browser, server, "run/q1")
    for arm, summary in report["arms"].items():
        row = page.find_element("css selector", f'#arms tr[data-arm="{arm}"][data-phase="eval"]')
        assert [cell(row, k) for k in ("attempted", "measured", "unmeasured", "coerced", "won", "rate")] == \
            [str(summary[k]) for k in ("attempted", "measured", "unmeasured", "coerced_actions", "successes")] + \
            [pct(summary["success_rate"])]
    rows = [json.loads(line) for line in (made["run"] / "games.jsonl").read_text().splitlines()]
    from selenium.webdriver.support.ui import Select

    Select(page.find_element("id", "f-phase")).select_by_visible_text("eval")
    Select(page.find_element("id", "f-outcome")).select_by_visible_text("lost")
    lost = [r for r in rows if r["success"] is False]
    shown = page.find_elements("css selector", "#games tbody tr")
    assert len(shown) == len(lost) and all(cell(r, "outcome") == "lost" for r in shown)
    assert page.find_element("id", "shown").text == f"{len(lost)} of 18 games"


def test_a_run_of_trials_counts_each_game_by_its_mean_over_its_trials(browser, tmp_path, game_cache):
    """eval.trials: a game's row holds its trials and `success` null; the run page counts it as
    measured by its mean (never as unmeasured), shows its trials won, and its game page says the
    steps are its first trial's."""
    home, runs = tmp_path / "home", tmp_path / "runs"
    env = {"SKILLOS_HOME": str(home), "SKILLOS_CACHE": str(game_cache)}
    result = run_cli("eval", ROOT / "evals" / "configs" / "quickstart.yaml", "--out", runs / "t", "--json",
                     "--set", "env.n_games=4", "--set", "env.n_train_games=4", "--set", "eval.trials=2",
                     "--override", "mde=a 4-game view check", env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [json.loads(line) for line in (runs / "t" / "games.jsonl").read_text().splitlines()]
    report = json.loads(result.stdout)
    proc, url = chromium.view_server(home, runs)
    try:
        page = open_page(browser, url, "run/t")
        for arm, summary in report["arms"].items():
            row = page.find_element("css selector", f'#arms tr[data-arm="{arm}"][data-phase="eval"]')
            assert [cell(row, k) for k in ("measured", "unmeasured", "rate")] == \
                [str(summary["measured"]), "0", pct(summary["mean_score"])]
        from selenium.webdriver.support.ui import Select

        Select(page.find_element("id", "f-phase")).select_by_visible_text("eval")
        outcomes = [cell(r, "outcome") for r in page.find_elements("css selector", "#games tbody tr")]
        assert sorted(outcomes) == sorted(f"{int(sum(r['trials']))}/2 trials won" for r in rows)
        first = rows[0]
        page = open_page(browser, url, f"game/t/{first['arm']}/eval/{first['game_id']}")
        assert page.find_element("id", "outcome").text.endswith("(the steps below: its first trial)")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_game_page_shows_retrieved_skills_steps_and_curation(made, server, browser, tmp_path):
    traces = [json.loads(line) for line in (made["run"] / "trajectories.jsonl").read_text().splitlines()]
    trace = next(t for t in traces if t["arm"] == "closed_loop" and t["phase"] == "eval" and t["retrieved"])
    route = f"game/q1/closed_loop/eval/{trace['game_id']}"
    page = open_page(browser, server, route)
    assert page.find_element("id", "task").text == trace["task"]
    items = page.find_elements("css selector", "#retrieved li")
    assert [i.find_element("css selector", "b").text for i in items] == [h["skill"] for h in trace["retrieved"]]
    assert [i.find_element("css selector", ".score").text for i in items] == [f"{h['score']:.3f}" for h in trace["retrieved"]]
    steps = cells(page, "#steps tbody tr")
    assert len(steps) == len(trace["steps"])
    assert [s[1] for s in steps] == [s["action"] for s in trace["steps"]]
    assert [s[3] for s in steps] == [str(s["admissible"]) for s in trace["steps"]]
    assert [c[:2] for c in cells(page, "#curation > tbody > tr")] == [[o["op"], o["skill"]] for o in trace["curation"]]
    shot = shoot(page, "game", tmp_path)
    assert shot.stat().st_size > 20_000


def test_repo_page_replays_the_repo_and_diffs_snapshots(made, server, browser):
    page = open_page(browser, server, "repo/q1/closed_loop")
    on_disk = len(list((made["run"] / "repo-closed_loop").glob("*/SKILL.md")))
    options = page.find_elements("css selector", "#at option")
    assert len(options) == 12 + 1  # empty, then after each of the 6 train and 6 eval games
    assert page.find_element("id", "snapshot-size").text.startswith(f"{on_disk} skills")
    from selenium.webdriver.support.ui import Select

    Select(page.find_element("id", "at")).select_by_index(1)  # after the first train game
    first = [json.loads(line) for line in (made["run"] / "trajectories.jsonl").read_text().splitlines()
             if '"train-0000"' in line and '"closed_loop"' in line][0]
    assert page.find_element("id", "snapshot-size").text.startswith(f"{len(first['curation'])} skills")
    diff = page.find_element("id", "diff").text
    assert all(op["skill"] in diff for op in first["curation"])


def test_a_run_in_progress_updates_and_a_partial_line_is_shown(made, server, browser):
    from selenium.webdriver.support.ui import WebDriverWait

    live = made["runs"] / "live"
    live.mkdir()
    lines = (made["run"] / "games.jsonl").read_text().splitlines()
    (live / "games.jsonl").write_text("\n".join(lines[:3]) + "\n" + lines[3][:40])  # cut mid-write
    page = open_page(browser, server, "run/live")
    assert "partial last line" in page.find_element("id", "problems").text
    assert len(page.find_elements("css selector", "#games tbody tr")) == 3
    (live / "games.jsonl").write_text("\n".join(lines[:5]) + "\n")  # the writer caught up
    WebDriverWait(browser, 15).until(lambda d: len(d.find_elements("css selector", "#games tbody tr")) == 5)
    assert not page.find_elements("id", "problems")


def test_the_viewer_never_writes_and_refuses_writes(made, server, browser):
    before = files_digest(made["home"], made["run"])
    for route in ("", "experiment/1", "run/q1", "failures", "repo/q1/closed_loop"):
        open_page(browser, server, route)
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen

    with pytest.raises(HTTPError) as refused:
        urlopen(Request(f"{server}api/doc", data=b"{}", method="POST"))
    assert refused.value.code == 405
    after = files_digest(made["home"], made["run"])
    assert {k: v for k, v in after.items() if not k.endswith(("-wal", "-shm"))} == \
        {k: v for k, v in before.items() if not k.endswith(("-wal", "-shm"))}


def test_failures_page_counts_match_the_ledger(made, server, browser):
    doc = api(server, "failures")
    page = open_page(browser, server, "failures")
    for name, n in doc["stats"]["by_category"].items():
        assert cell(page.find_element("css selector", f'#by-category tr[data-name="{name}"]'), "n") == str(n)
    assert len(page.find_elements("css selector", "#failures tbody tr")) == len(doc["failures"]) >= 2
    assert cells(page, "#fixes tbody tr")[0][2] == "strip titles from skill bodies"
    assert "not verified yet" in page.find_element("id", "fixes").text


def test_a_corrupt_ledger_row_is_shown_not_a_blank_page(made, browser, tmp_path):
    home, runs = tmp_path / "home", tmp_path / "runs"
    shutil.copytree(made["home"], home)
    shutil.copytree(made["runs"] / "q1", runs / "q1")
    db = sqlite3.connect(home / "ledger.db")
    db.execute("UPDATE runs SET config_json = '{\"output\": broken' WHERE id = 2")
    db.execute("UPDATE evals SET n_measured = 'six' WHERE run_id = 1")
    db.execute("INSERT INTO corrections (table_name, row_id, kind, value, reason, actor, created_at) "
               "VALUES ('fixes', 1, 'verdict', 'not json', 'x', 'agent', '2026-12-01')")
    db.commit()
    db.close()
    traces = [json.loads(line) for line in (runs / "q1" / "trajectories.jsonl").read_text().splitlines()]
    game = next(t for t in traces if t["arm"] == "no_memory")  # as the runner records a coerced action
    game["steps"][0].update(coerced=True, proposed="fly to the moon")
    (runs / "q1" / "trajectories.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    proc, url = chromium.view_server(home, runs)
    try:
        page = open_page(browser, url, f"game/q1/no_memory/eval/{game['game_id']}")
        (coerced,) = page.find_elements("css selector", "#steps tr.coerced")
        assert "coerced" in coerced.text and "executor typed: fly to the moon" in coerced.text
        page = open_page(browser, url, "experiment/1")
        problems = page.find_element("id", "problems").text
        assert "run #2 config_json" in problems and "n_measured is 'six'" in problems
        assert len(page.find_elements("css selector", "#runs tbody tr")) == 2  # the rest still renders
        page = open_page(browser, url, "failures")
        assert "fix #1" in page.find_element("id", "problems").text
        assert len(page.find_elements("css selector", "#failures tbody tr")) >= 2
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    (home / "ledger.db").write_bytes(b"not a database at all" * 100)
    proc, url = chromium.view_server(home, runs)
    try:
        page = open_page(browser, url, "")
        assert "not a usable skillos ledger" in page.find_element("id", "problems").text
        assert page.find_elements("css selector", "#runs tbody tr")  # the run folders still show
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# -- the static export ------------------------------------------------------------------------------
def test_the_static_export_opens_from_disk_with_the_same_numbers(made, browser, tmp_path):
    site = tmp_path / "site"
    result = run_cli("view", "--export", site, "--home", made["home"], "--runs", made["runs"])
    assert result.returncode == 0, result.stderr
    assert (site / "index.html").exists() and json.loads((site / "data" / "manifest.json").read_text())
    url = (site / "index.html").as_uri()
    report = made["report"]
    page = open_page(browser, url, "experiment/1")
    row = page.find_element("css selector", '#comparisons tr[data-treatment="closed_loop"]')
    assert cell(row, "bc") == f"{report['comparisons'][0]['b']} / {report['comparisons'][0]['c']}"
    assert "static export" in page.find_element("id", "mode").text
    page = open_page(browser, url, "game/q1/closed_loop/eval/valid_unseen-0001")
    assert page.find_elements("css selector", "#retrieved li") and page.find_elements("css selector", "#steps tbody tr")
    # a second export replaces the first; a folder that is not an export is refused
    assert run_cli("view", "--export", site, "--home", made["home"], "--runs", made["runs"]).returncode == 0
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    refused = run_cli("view", "--export", other, "--home", made["home"], "--runs", made["runs"])
    assert refused.returncode == 2 and "not an earlier skillos view export" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and (other / "notes.txt").read_text() == "mine"


# -- inspect_ai ------------------------------------------------------------------------------------
def test_export_inspect_reads_back_one_sample_per_game_with_unmeasured_unscored(made, tmp_path):
    from inspect_ai.log import read_eval_log

    run = tmp_path / "run"
    shutil.copytree(made["run"], run)
    rows = [json.loads(line) for line in (run / "games.jsonl").read_text().splitlines()]
    rows[2].update(success=None, unmeasured=True, unmeasured_reason="ConnectionError: executor endpoint down")
    (run / "games.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "logs" / "q1.eval"
    result = run_cli("export", "inspect", run, out, "--json")
    assert result.returncode == 0, result.stderr
    log = read_eval_log(str(out))
    assert log.status == "success" and len(log.samples) == len(rows) == 12
    by_id = {s.id: s for s in log.samples}
    for row in rows:
        sample = by_id[f"{row['arm']}/{row['game_id']}"]
        assert sample.metadata["arm"] == row["arm"] and sample.metadata["task_type"] == row["task_type"]
        assert [h["skill"] for h in sample.metadata["skills_retrieved"]] == row["skills_retrieved"]
        if row["unmeasured"]:
            assert sample.scores is None and sample.metadata["unmeasured_reason"].startswith("ConnectionError")
        else:
            assert sample.scores["skillos_success"].value == int(row["success"])
        assert len(sample.messages) == 2 + 2 * row["steps"]  # task + intro, then action/observation pairs
    score = log.results.scores[0]
    assert (score.scored_samples, score.unscored_samples) == (11, 1)
    measured = [r for r in rows if not r["unmeasured"]]
    assert score.metrics["accuracy"].value == pytest.approx(sum(r["success"] for r in measured) / len(measured))
    missing = run_cli("export", "inspect", tmp_path / "nope", out)
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr


# -- sweeps and optimize runs (real ones, small: the slow step) ---------------------------------------
@pytest.mark.slow  # a real sweep and a real optimize run, ~30 s
def test_sweep_and_optimize_pages_show_lift_and_candidates(made, browser, tmp_path, game_cache):
    import yaml

    from conftest import ROOT

    home, runs = tmp_path / "home", tmp_path / "runs"
    env = {"SKILLOS_HOME": str(home)}
    early = tmp_path / "checkpoint-10"
    shutil.copytree(made["run"] / "repo-closed_loop" / "put-a-x-in-y", early / "put-a-x-in-y")
    late = tmp_path / "checkpoint-20"
    shutil.copytree(made["run"] / "repo-closed_loop", late, ignore=shutil.ignore_patterns(".progress.json"))
    sweep = run_cli("sweep", ROOT / "evals" / "configs" / "quickstart.yaml", "--repo", early, "--repo", late,
                    "--executor", "heuristic", "--n-games", 6, "--n-train-games", 4, "--out", runs / "sweep",
                    "--set", "env.seed=7", env=env)  # games the closed_loop repo never curated on
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    data = yaml.safe_load((ROOT / "training" / "configs" / "optimize-quickstart.yaml").read_text())
    data["env"].update(n_games=4, n_train_games=3)
    data["optimize"].update(epochs=1, minibatch_size=3, n_validation=4)
    (tmp_path / "opt.yaml").write_text(yaml.safe_dump(data))
    optimize = run_cli("optimize", tmp_path / "opt.yaml", "--out", runs / "opt", "--override",
                       "optimize-power=a 4-task validation split keeps the viewer test small", env=env)
    assert optimize.returncode == 0, optimize.stderr[-2000:]

    proc, url = chromium.view_server(home, runs)
    try:
        summary = json.loads((runs / "sweep" / "sweep.json").read_text())
        page = open_page(browser, url, "run/sweep")
        points = page.find_elements("css selector", "#run-sweep circle.point")
        assert [(int(p.get_attribute("data-step")), p.get_attribute("data-verdict")) for p in points] == \
            [(r["step"], r["verdict"]["label"]) for r in summary["rows"]]
        assert [float(p.get_attribute("data-y")) for p in points] == pytest.approx([r["treatment_rate"] for r in summary["rows"]])
        for r in summary["rows"]:
            row = page.find_element("css selector", f'#sweep tr[data-step="{r["step"]}"]')
            assert cell(row, "difference") == pts(r["difference"])
            assert cell(row, "ci") == f"[{pts(r['ci_low'])}, {pts(r['ci_high'])}]"
        shoot(page, "sweep", tmp_path)

        history = [json.loads(line) for line in (runs / "opt" / "history.jsonl").read_text().splitlines()]
        page = open_page(browser, url, "run/opt")
        rows = page.find_elements("css selector", "#candidates > tbody > tr")
        assert len(rows) == len(history) >= 1
        for row, entry in zip(rows, history):
            assert cell(row, "verdict") == entry["verdict"]
            assert cell(row, "n") == f"{entry['n_paired']} / {entry['n_tasks']}, {entry['n_unmeasured']} unmeasured"
            assert cell(row, "arith").startswith(
                f"mean {entry['mean_difference']:+.3f} {'>' if entry['mean_difference'] > entry['threshold'] else '≤'} "
                f"threshold {entry['threshold']:+.3f}")
        report = json.loads((runs / "opt" / "report.json").read_text())
        for arm in ("seed", "best"):
            row = page.find_element("css selector", f'#optimize-arms tr[data-arm="{arm}"]')
            assert [cell(row, k) for k in ("attempted", "measured", "unmeasured", "won")] == \
                [str(report[arm][k]) for k in ("attempted", "measured", "unmeasured", "successes")]
        exp_id = next(e["id"] for e in api(url, "experiments")["experiments"] if e["name"] == "optimize-quickstart")
        page = open_page(browser, url, f"experiment/{exp_id}")
        assert len(page.find_elements("css selector", "#candidates > tbody > tr")) == len(history)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_resume_keeps_one_trace_per_kept_game_and_drops_a_cut_off_line(made, tmp_path, game_cache):
    run = tmp_path / "q1"
    shutil.copytree(made["run"], run)
    lines = (run / "games.jsonl").read_text().splitlines()
    lost = max(i for i, line in enumerate(lines) if '"no_memory"' in line)
    del lines[lost]  # a control game's row was lost: that one game is played again
    (run / "games.jsonl").write_text("\n".join(lines) + "\n")
    with open(run / "trajectories.jsonl", "a") as fh:
        fh.write('{"arm": "no_memory", "phase": "eval", "game_id": "valid_unseen-00')  # killed mid-write
    result = run_cli("quickstart", "--n-games", 6, "--n-train-games", 6, "--out", run, "--resume", "--json",
                     cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    traces = [json.loads(line) for line in (run / "trajectories.jsonl").read_text().splitlines()]
    games = {(t["arm"], t["phase"], t["game_id"]) for t in traces}
    assert len(traces) == len(games) == 18  # the lost game played again, traced once
