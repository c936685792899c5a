"""The viewer's plots in a real headless Chromium, against the JSON each page was built from: the
index's headline per experiment, each arm's success rate with its Wilson CI, the forest of an
experiment's comparisons with the MDE band and the verdict words, a checkpoint sweep's curve
with the control's band and the best-of-n caveat, and training reward / components / health per
step from the newest checkpoint's log. Unmeasured values are written, never drawn as 0. Then
`skillos export report`: report.html opened from disk draws the same points its CSV files list.
The world is written by tests/plot_world.py (no game played, no model trained)."""

import csv
import json

import pytest

import chromium

from conftest import run_cli
from plot_world import build



@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return build(tmp_path_factory.mktemp("plots"))


@pytest.fixture(scope="module")
def server(world):
    proc, url = chromium.view_server(world["home"], world["runs"])
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    driver = chromium.start()
    yield driver
    driver.quit()


api = chromium.api


def open_page(browser, url, route):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{url}#/{route}")
    WebDriverWait(browser, 20).until(
        lambda d: d.find_element("css selector", "body").get_attribute("data-ready") == (route or "experiments"))
    assert not browser.find_elements("id", "problems"), browser.find_element("id", "problems").text
    assert "could not draw" not in browser.find_element("css selector", "main").text
    return browser


def drawn(browser, selector) -> list[dict]:
    """Every drawn point's data attributes, as the page set them."""
    return browser.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).map(e => Object.assign({}, e.dataset))", selector)


def num(attr):
    return None if attr is None else float(attr)


def pct(x):
    return f"{100 * x:.1f}%"


# -- the live page ----------------------------------------------------------------------------------
def test_the_index_shows_each_experiments_arms_rates_denominators_and_verdicts(world, server, browser):
    doc = api(server, "experiments")
    page = open_page(browser, server, "")
    for exp in doc["experiments"]:
        cell = page.find_element("css selector", f'#experiments tr[data-id="{exp["id"]}"] td[data-k="headline"]')
        arms = cell.find_elements("css selector", ".h-arm")
        assert len(arms) == len(exp["headline"]["arms"])
        for span, arm in zip(arms, exp["headline"]["arms"]):
            assert span.get_attribute("data-label") == arm["label"]
            if arm["rate"] is None:
                assert span.text == f"{arm['label']} unmeasured ({arm['unmeasured']})"
            else:
                assert span.text == f"{arm['label']} {pct(arm['rate'])} ({arm['successes']}/{arm['n']})"
        verdicts = [v.text for v in cell.find_elements("css selector", ".h-verdict")]
        assert verdicts == [f"{v['treatment']} vs {v['control']}: {v['verdict']}" for v in exp["headline"]["verdicts"]]
    first = next(e for e in doc["experiments"] if e["name"] == "exp1")["headline"]
    assert {v["verdict"] for v in first["verdicts"]} == {"not detected (below the MDE)", "not reportable"}
    bare = next(e for e in doc["experiments"] if e["name"] == "ledger-only")["headline"]
    assert bare["from"] == "ledger" and bare["arms"] == [
        {"label": "a", "successes": 2, "n": 3, "rate": 2 / 3, "unmeasured": None}]


def test_arm_rates_and_the_forest_are_drawn_from_the_json(world, server, browser):
    from skillos.evals import stats

    doc = api(server, f"experiment/{world['experiments']['eval']}")
    plots = doc["reports"][0]["plots"]
    page = open_page(browser, server, f"experiment/{world['experiments']['eval']}")
    points = drawn(page, "#r0-arms circle.point")
    measured = [a for a in plots["arms"] if a["rate"] is not None]
    assert [(p["label"], num(p["x"]), num(p["lo"]), num(p["hi"]), int(p["n"]), int(p["successes"])) for p in points] == \
        [(a["label"], a["rate"], a["lo"], a["hi"], a["n"], a["successes"]) for a in measured]
    for a in measured:  # the interval is stats.rate_ci's, over the report's own denominators
        arm = world["report"]["arms"][a["label"]]
        assert (a["lo"], a["hi"]) == stats.rate_ci(arm["successes"], arm["measured"]) and a["n"] == arm["measured"]
    (broken,) = [a for a in plots["arms"] if a["rate"] is None]
    text = page.find_element("css selector", f'#r0-arms text.unmeasured[data-label="{broken["label"]}"]').text
    assert text.startswith("unmeasured (no game measured") and len(points) == len(plots["arms"]) - 1

    rows = plots["forest"]
    points = drawn(page, "#r0-forest circle.point")
    shown = [r for r in rows if r["unmeasured"] is None]
    assert [(num(p["x"]), num(p["lo"]), num(p["hi"]), num(p["mde"])) for p in points] == \
        [(r["effect"], r["lo"], r["hi"], r["mde"]) for r in shown]
    bands = drawn(page, "#r0-forest rect.band")
    assert [(num(b["lo"]), num(b["hi"])) for b in bands] == [(-r["mde"], r["mde"]) for r in rows if r["mde"] is not None]
    words = [t.text for t in page.find_elements("css selector", "#r0-forest text.verdict")]
    assert words == [r["verdict"] for r in rows]
    recorded = {c["treatment"]: c.get("verdict") for c in world["report"]["comparisons"]}
    for r in rows:
        if recorded[r["label"]] is not None:
            assert r["verdict"] == recorded[r["label"]]["label"]
    # the comparison written without its verdict is judged again in its own family, by stats.verdicts
    (flaky,) = [c for c in doc["reports"][0]["comparisons"] if c["treatment"] == "flaky"]
    assert flaky["verdict"]["recomputed"] and flaky["verdict"]["family"] == "exp1: arms vs no_memory"
    assert flaky["verdict"]["family_size"] == 3 and flaky["verdict"]["p_adjusted"] == pytest.approx(0.75)
    table = page.find_element("css selector", '#comparisons tr[data-treatment="flaky"] td[data-k="verdict"]').text
    assert table == flaky["verdict"]["label"]
    (none,) = [r for r in rows if r["unmeasured"]]
    assert page.find_element("css selector", f'#r0-forest text.unmeasured[data-label="{none["label"]} vs no_memory"]').text \
        == f"unmeasured ({none['unmeasured']})"


def test_a_sweep_is_a_curve_with_cis_the_controls_band_and_the_caveat(world, server, browser):
    doc = api(server, "run/sweep")
    sweep = doc["plots"]["sweep"]
    page = open_page(browser, server, "run/sweep")
    points = drawn(page, "#run-sweep circle.point")
    assert [(num(p["x"]), num(p["y"]), num(p["lo"]), num(p["hi"]), p["label"], p["verdict"]) for p in points] == \
        [(p["step"], p["rate"], p["lo"], p["hi"], p["label"], p["verdict"]) for p in sweep["points"]]
    assert [p["step"] for p in sweep["points"]] == [r["step"] for r in world["sweep"]["rows"]]
    (band,) = drawn(page, "#run-sweep rect.band")
    control = sweep["control"]
    assert (num(band["lo"]), num(band["hi"]), num(band["y"])) == (control["lo"], control["hi"], control["rate"])
    assert control["n"] == world["sweep_report"]["arms"]["no_memory"]["measured"]
    caveat = page.find_element("css selector", ".plotbox .caveat").text
    assert world["sweep"]["caveat"] in caveat and f"Best: {world['sweep']['best']}" in caveat


def test_training_reward_components_and_health_per_step(world, server, browser):
    doc = api(server, "run/train")
    training = doc["training"]
    assert training["source"] == "checkpoint-4/trainer_state.json" and training["up_to_step"] == 4
    page = open_page(browser, server, "run/train")
    for i, panel in enumerate(training["panels"]):
        assert panel["series"], panel
        points = drawn(page, f"#run-training-{i} circle.point")
        want = [(s["label"], p["x"], p["y"]) for s in panel["series"] for p in s["points"] if p["y"] is not None]
        assert [(p["series"], num(p["x"]), num(p["y"])) for p in points] == want
    titles = [p["title"] for p in training["panels"]]
    assert titles == ["reward", "reward health", "policy"]
    labels = {s["label"] for p in training["panels"] for s in p["series"]}
    assert {"reward", "reward/r_task", "reward/r_fc", "reward/r_cnt", "health/task_share", "kl", "entropy"} <= labels
    # step 3 logged no health numbers: a gap in the line, no point drawn at 0
    health = drawn(page, "#run-training-1 circle.point")
    assert 3.0 not in [num(p["x"]) for p in health] and len(health) == 2 * 3
    paths = page.execute_script("return Array.from(document.querySelectorAll('#run-training-1 path')).map(p => p.getAttribute('d'))")
    assert all(d.count("M") == 2 for d in paths)
    # the experiment page of the training run shows the same curves
    page = open_page(browser, server, f"experiment/{world['experiments']['train']}")
    assert len(drawn(page, "#t0-training-0 circle.point")) == len(drawn(browser, "#t0-training-0 circle.point")) > 0


def test_the_static_export_draws_the_same_points(world, browser, tmp_path, server):
    site = tmp_path / "site"
    from skillos.view import export_site

    assert export_site(site, world["home"], world["runs"])["pages"] > 5
    doc = api(server, "run/sweep")
    page = open_page(browser, (site / "index.html").as_uri(), "run/sweep")
    assert [num(p["y"]) for p in drawn(page, "#run-sweep circle.point")] == [p["rate"] for p in doc["plots"]["sweep"]["points"]]


# -- skillos export report --------------------------------------------------------------------------
def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def val(cell):
    return None if cell == "" else float(cell)


def open_report(browser, folder):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get((folder / "report.html").as_uri())
    WebDriverWait(browser, 20).until(lambda d: d.find_element("css selector", "body").get_attribute("data-ready") == "report")
    return browser


def test_export_report_of_a_sweep_draws_what_its_csv_files_list(world, browser, tmp_path):
    from skillos.view import Source

    out = tmp_path / "paper" / "sweep-report"
    result = run_cli("export", "report", world["runs"] / "sweep", out, "--json")
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [".skillos-report", "report.html", "data.json", "arms.csv", "comparisons.csv", "sweep.csv"])
    doc = Source(world["home"], world["runs"]).doc("run/sweep")["plots"]
    sweep = read_csv(out / "sweep.csv")
    assert [(r["repo"], int(r["step"]), int(r["successes"]), int(r["measured"]), val(r["rate"]), val(r["rate_ci_low"]),
             val(r["rate_ci_high"]), val(r["control_rate"]), r["verdict"]) for r in sweep] == \
        [(p["label"], p["step"], p["successes"], p["n"], p["rate"], p["lo"], p["hi"], doc["sweep"]["control"]["rate"],
          p["verdict"]) for p in doc["sweep"]["points"]]
    arms = read_csv(out / "arms.csv")
    assert [(a["arm"], int(a["successes"]), int(a["measured"]), val(a["rate"])) for a in arms] == \
        [(a["label"], a["successes"], a["n"], a["rate"]) for a in doc["arms"]]
    comps = read_csv(out / "comparisons.csv")
    assert [(c["treatment"], val(c["difference"]), val(c["ci_low"]), val(c["mde"]), int(c["n_paired"]), c["verdict"])
            for c in comps] == [(f["label"], f["effect"], f["lo"], f["mde"], f["n_paired"], f["verdict"]) for f in doc["forest"]]
    html = (out / "report.html").read_text()
    assert "<script src" not in html and "http://" not in html.split("</head>")[1].split("<script")[0]
    browser.get_log("browser")  # what earlier pages logged
    page = open_report(browser, out)
    points = drawn(page, "#r0-sweep circle.point")
    assert [(num(p["x"]), num(p["y"]), num(p["lo"]), num(p["hi"])) for p in points] == \
        [(float(r["step"]), val(r["rate"]), val(r["rate_ci_low"]), val(r["rate_ci_high"])) for r in sweep]
    assert [num(p["x"]) for p in drawn(page, "#r0-forest circle.point")] == [val(c["difference"]) for c in comps]
    assert doc["sweep"]["caveat"] in page.find_element("css selector", ".caveat").text
    assert not [e for e in page.get_log("browser") if e["level"] == "SEVERE"]  # the inline scripts ran under its policy


def test_export_report_of_an_experiment_and_a_refused_target(world, browser, tmp_path):
    from skillos.errors import SkillosError
    from skillos.view.report import export_report

    exp = world["experiments"]["eval"]
    out = tmp_path / "exp-report"
    written = export_report(str(exp), out, world["home"], world["runs"])  # the library call the CLI makes
    assert written["kind"] == "experiment" and written["rows"] == {"arms.csv": 4, "comparisons.csv": 3}
    comps = read_csv(out / "comparisons.csv")
    by_name = {c["treatment"]: c for c in world["report"]["comparisons"]}
    for row in comps:  # the verdict words: the recorded one, or stats.verdicts again for the one without
        recorded = by_name[row["treatment"]].get("verdict")
        assert row["verdict"] == (recorded["label"] if recorded else "not detected (below the MDE)")
        assert int(row["n_paired"]) == by_name[row["treatment"]]["n_paired"]
    (unmeasured,) = [c for c in comps if c["unmeasured_reason"]]
    assert unmeasured["difference"] == "" and unmeasured["verdict"] == "not reportable"  # empty, never 0
    arms = {a["arm"]: a for a in read_csv(out / "arms.csv")}
    for name, arm in world["report"]["arms"].items():
        assert (arms[name]["successes"], arms[name]["measured"]) == (str(arm["successes"]), str(arm["measured"]))
    assert arms["broken"]["rate"] == "" and arms["broken"]["unmeasured_reason"].startswith("no game measured")
    page = open_report(browser, out)
    assert len(drawn(page, "#r0-arms circle.point")) == 3 and "unmeasured (" in page.find_element("id", "r0-arms").text
    # by name too, and a second export replaces the first
    assert export_report("exp1", out, world["home"], world["runs"])["target"] == f"experiment #{exp}"
    # a training run's folder is a report of its training curves (it used to be refused as "no report.json")
    trained = run_cli("export", "report", world["runs"] / "train", tmp_path / "train-report", "--json",
                      "--home", world["home"], "--runs", world["runs"])
    assert trained.returncode == 0, trained.stderr
    assert json.loads(trained.stdout)["kind"] == "training" and json.loads(trained.stdout)["rows"]["training.csv"] > 0
    plain = tmp_path / "not-a-run"
    plain.mkdir()
    (plain / "notes.txt").write_text("no run files")
    before = sorted(p.name for p in tmp_path.iterdir())
    for target in ("no-such-experiment", str(plain)):  # the CLI: one line, exit 2
        refused = run_cli("export", "report", target, tmp_path / "refused", "--home", world["home"], "--runs", world["runs"])
        assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "Traceback" not in refused.stderr and target in refused.stderr
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    for target, out_dir, says in (("99", tmp_path / "refused", "neither a run folder nor an experiment"),
                                  (str(tmp_path / "missing-folder"), tmp_path / "refused", "neither a run folder"),
                                  (str(world["experiments"]["bare"]), tmp_path / "refused", "nothing to report"),
                                  ("exp1", mine, "not an earlier skillos report")):
        with pytest.raises(SkillosError, match=says):
            export_report(target, out_dir, world["home"], world["runs"])
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(before + ["mine"])  # nothing else, no temporary folder
