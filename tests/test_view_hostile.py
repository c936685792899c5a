"""The viewer is a read-only local page that runs no data (class 2 of issue 24): a payload in
every field of every record a page shows (text fields, and strings where numbers are expected,
in run folders and in every ledger column) is drawn as text in real headless Chromium, served
and in the static export; the server reads only files under the run folders it was given (no
`..`, encoded or not, through any parameter; no symlink out; no ledger-named folder elsewhere),
answers only to its own Host, and refuses every method but GET and HEAD."""

import http.client
import json
import os
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

import pytest

import chromium

MARK = "XSSMARK"
PAYLOADS = [
    f'{MARK}<img src=x onerror="window.__xss=1" data-xss=1>',
    f'{MARK}"><svg onload="window.__xss=2" data-xss=2></svg>',
    f"{MARK}'><script>window.__xss=3</script><b data-xss=3>",
    f"{MARK}</script><script>window.__xss=4</script>",
    f"{MARK}javascript:window.__xss=5",
    f"{MARK}<iframe srcdoc=\"<script>parent.__xss=6</script>\" data-xss=6></iframe>",
]
SECRET = "SECRET-OUTSIDE-THE-RUNS-7f3a"


def payload(i: int) -> str:
    return PAYLOADS[i % len(PAYLOADS)]


def poison(value, counter=[0]):
    """Every leaf of a record replaced by a payload string (numbers and booleans too)."""
    if isinstance(value, dict):
        return {k: poison(v) for k, v in value.items()}
    if isinstance(value, list):
        return [poison(v) for v in value] or [poison("x")]
    counter[0] += 1
    return payload(counter[0])


def jsonl(path: Path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def game_row(arm, phase, gid, success):
    return {"arm": arm, "phase": phase, "game_id": gid, "task_type": "pick", "task": "put a mug in the sink",
            "success": success, "steps": 3, "coerced_actions": 1, "skills_retrieved": ["a", "b"], "repo_size": 2,
            "unmeasured": False, "unmeasured_reason": None, "curator_calls": 1, "schema_version": 1}


def trace_row(arm, phase, gid):
    return {"arm": arm, "phase": phase, "game_id": gid, "task": "put a mug in the sink", "task_type": "pick",
            "intro": "You are in a room.", "success": True, "unmeasured_reason": None,
            "retrieved": [{"skill": "a", "score": 1.5}],
            "steps": [{"action": "go to sink", "observation": "ok", "coerced": True, "admissible": 4, "proposed": "sink"}],
            "curation": [{"op": "insert", "skill": "a", "markdown": "---\nname: a\ndescription: d\n---\n# A\n- step\n"}]}


def comparison():
    return {"treatment": "closed_loop", "control": "no_memory", "n_paired": 6, "n_dropped": 0,
            "control_rate": 0.5, "treatment_rate": 0.8, "difference": 0.3, "b": 2, "c": 0, "p_value": 0.5,
            "p_adjusted": 0.5, "ci_low": 0.1, "ci_high": 0.5, "mde": 0.4, "significant": False, "note": "n"}


def write_run(folder: Path, hostile: bool) -> None:
    """A run folder with every file the viewer reads; `hostile`: every leaf is a payload string."""
    f = poison if hostile else (lambda v: v)
    arm = payload(1) if not hostile else None
    arms = [arm or "closed_loop", "no_memory"]
    folder.mkdir(parents=True)
    games = [f(game_row(a, "eval", f"g{i}", True)) for a in arms for i in range(2)]
    if not hostile:  # text fields carry payloads, numbers stay numbers
        for i, g in enumerate(games):
            g.update(task=payload(i), task_type=payload(i + 1), unmeasured_reason=payload(i + 2), game_id=payload(i) + str(i))
    jsonl(folder / "games.jsonl", games)
    jsonl(folder / "curation.jsonl", [f(game_row(arms[0], "train", "t0", True))])
    traces = [f(trace_row(g["arm"], g["phase"], g["game_id"])) if not hostile else f(trace_row("x", "eval", "y"))
              for g in games]
    if not hostile:
        for i, t in enumerate(traces):
            t["steps"][0].update(action=payload(i), observation=payload(i + 1), proposed=payload(i + 2))
            t["curation"][0].update(skill=payload(i), markdown=f"---\nname: {payload(i)}\n---\n# {payload(i + 1)}\n- {payload(i + 2)}\n| {payload(3)} |\n")
            t["retrieved"][0]["skill"] = payload(i + 3)
            t["intro"] = payload(i + 4)
    jsonl(folder / "trajectories.jsonl", traces)
    arm_summary = {"attempted": 4, "measured": 3, "unmeasured": 1, "successes": 2, "unmeasured_reasons": [payload(2)]}
    named = {**comparison(), "treatment": payload(3), "note": payload(4)}  # no verdict: judged again, drawn
    del named["difference"]
    report = {"comparisons": [comparison(), named], "family_correction": "holm", "control": "no_memory",
              "arms": {payload(1): arm_summary, "no_memory": arm_summary, payload(5): {**arm_summary, "measured": 0}},
              "verdict": "not reportable", "candidates_tried": 2, "accepted": 0, "gate": "paired",
              "calibration": {"verdict": "reject", "reason": "a/a"}, "p_corrected": 0.4,
              "seed": {"attempted": 4, "measured": 4, "unmeasured": 0, "coerced_actions": 0, "successes": 2, "success_rate": 0.5},
              "best": {"attempted": 4, "measured": 4, "unmeasured": 0, "coerced_actions": 0, "successes": 3, "success_rate": 0.75},
              "comparison": comparison()}
    (folder / "report.json").write_text(json.dumps(poison(report) if hostile else
                                                   {**report, "verdict": payload(2), "family_correction": payload(3)}))
    sweep = {"rows": [{"repo": "r1", "step": 10, "treatment_rate": 0.5, "control_rate": 0.4, "difference": 0.1,
                       "ci_low": -0.1, "ci_high": 0.3, "p_value": 0.5, "p_adjusted": 0.9, "mde": 0.3,
                       "n_paired": 6, "n_dropped": 0}], "caveat": "c", "best": "r1"}
    sweep["rows"].append({**sweep["rows"][0], "repo": payload(1), "step": 20})
    (folder / "sweep.json").write_text(json.dumps(poison(sweep) if hostile else {**sweep, "caveat": payload(4), "best": payload(5)}))
    state = {"global_step": 2, "log_history": [{"step": s, "reward": 0.5, f"reward/{payload(s)}": 0.1 * s,
                                                f"health/{payload(s + 1)}": payload(s)} for s in (1, 2)]}
    (folder / "checkpoint-2").mkdir()
    (folder / "checkpoint-2" / "trainer_state.json").write_text(json.dumps(poison(state) if hostile else state))
    candidate = {"candidate": 1, "epoch": 1, "step": 1, "edits": ["add x"], "verdict": "reject", "mode": "paired",
                 "mean_difference": 0.1, "threshold": 0.2, "se": 0.1, "incumbent_rate": 0.5, "candidate_rate": 0.6,
                 "n_paired": 4, "n_tasks": 4, "n_unmeasured": 0, "diff": "+ a\n- b", "reason": "r"}
    jsonl(folder / "history.jsonl", [poison(candidate) if hostile else
                                     {**candidate, "edits": [payload(1)], "diff": f"+ {payload(2)}\n- {payload(3)}",
                                      "reason": payload(4), "verdict": payload(5)}])
    skill = folder / f"repo-{arms[0] if '/' not in arms[0] else 'closed_loop'}" / "a"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: a\ndescription: {payload(0)}\n---\n# {payload(1)}\n{payload(2)}\n")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("hostile")
    home, runs = root / "home", root / "runs"
    write_run(runs / "texts", hostile=False)
    write_run(runs / "leaves", hostile=True)
    outside = root / "outside"  # never to be read: a symlink target and a ledger-named folder
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET + "\n")
    jsonl(outside / "games.jsonl", [{"arm": SECRET, "game_id": SECRET, "task": SECRET}])
    (runs / "texts" / "repo-linked").mkdir()
    (runs / "texts" / "repo-linked" / "s").mkdir()
    os.symlink(outside / "secret.txt", runs / "texts" / "repo-linked" / "s" / "SKILL.md")
    (runs / "linked").mkdir()
    os.symlink(outside / "games.jsonl", runs / "linked" / "games.jsonl")
    os.symlink(outside, runs / "escape")

    from skillos.ledger import Ledger

    with Ledger(home / "ledger.db") as ledger:
        ledger.set_goal(payload(0), "person")
        exp = ledger.add_experiment(payload(1), hypothesis=payload(2), success_metric=payload(3))
        run = ledger.start_run(exp, arm=payload(4), config={"output": str(runs / "texts"), "x": payload(5)},
                               seed=1, executor_fingerprint=payload(0))
        ledger.add_eval(run, payload(1), {"attempted": 2, "measured": 2, "unmeasured": 0, "successes": 1,
                                          "coerced_actions": 0, "actions": 4}, str(runs / "texts" / "games.jsonl"), "0")
        ledger.end_run(run, "finished", payload(2))
        ledger.add_gate_result(5, payload(3), "FAIL", payload(4), payload(5), payload(0), experiment_id=exp)
        ledger.add_override(5, payload(1), payload(2), payload(3), experiment_id=exp)
        ledger.add_candidate(run, edits=json.dumps([payload(4)]), verdict=payload(5), diff=payload(0))
        fid = ledger.add_failure(payload(1), "process", detected_by="agent", experiment_id=exp)
        ledger.add_fix(fid, payload(2), "success_rate", "up", 0.1, before_run_id=run)
        ledger.correct("experiments", exp, "conclusion", payload(4), value=payload(5))
        other = ledger.add_experiment("leaves")  # every column that is not an id or a link: a payload
        outside_run = ledger.start_run(other, arm="a", config={"output": str(outside)})  # not under --runs
        ledger.add_eval(outside_run, "a", {"attempted": 1, "measured": 1, "unmeasured": 0, "successes": 1,
                                           "coerced_actions": 0, "actions": 1}, None, None)
        ledger.add_failure("second", "process", experiment_id=other)
    db = sqlite3.connect(home / "ledger.db")
    i = 0
    for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        for col in [c[1] for c in db.execute(f"PRAGMA table_info({table})")]:
            if col == "id" or col.endswith("_id") or col in ("table_name", "config_json"):
                continue
            i += 1
            db.execute(f"UPDATE {table} SET {col} = ? WHERE rowid = (SELECT max(rowid) FROM {table})", (payload(i),))
    db.commit()
    db.close()
    return {"root": root, "home": home, "runs": runs, "outside": outside}


@pytest.fixture(scope="module")
def served(world):
    proc, url = chromium.view_server(world["home"], world["runs"])
    yield url, int(url.rstrip("/").rsplit(":", 1)[1])
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    driver = chromium.start()
    yield driver
    driver.quit()


def keys(world):
    from skillos.view import Source

    found = list(dict.fromkeys(Source(world["home"], world["runs"]).keys()))
    kinds = {k.split("/")[0] for k in found}
    assert kinds == {"experiments", "failures", "experiment", "run", "game", "repo"}, kinds
    return found


def check_page(browser, base, key, route_of):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get("about:blank")
    browser.get(base + "#/" + route_of(key))
    WebDriverWait(browser, 20).until(lambda d: d.find_element("css selector", "body").get_attribute("data-ready"))
    time.sleep(0.05)  # an onerror / onload handler would have run by now
    body = browser.find_element("css selector", "body").text
    assert browser.execute_script("return window.__xss === undefined && window.parent.__xss === undefined"), key
    assert not browser.find_elements("css selector", "[data-xss], img[src='x'], iframe, svg[onload], script:not([src])"), key
    assert "could not draw this document" not in body and "could not draw this plot" not in body, (key, body[:500])
    return body


def route(key):
    from skillos.view.data import split_key

    return "/".join(quote(p, safe="") for p in split_key(key))


def test_every_page_draws_every_payload_as_text_when_served(world, served, browser):
    url, _ = served
    shown = 0
    for key in keys(world):
        body = check_page(browser, url, key, route)
        shown += MARK in body
    assert shown >= len(keys(world)) - 2  # the payloads are on the pages, as text


def test_every_page_draws_every_payload_as_text_in_the_static_export(world, browser, tmp_path):
    from skillos.view import export_site

    site = tmp_path / "site"
    export_site(site, world["home"], world["runs"])
    assert SECRET not in "".join(p.read_text(errors="replace") for p in site.rglob("*") if p.is_file())
    for key in keys(world):
        check_page(browser, (site / "index.html").as_uri(), key, route)


def get(port, path, method="GET", host=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
    conn.endheaders()
    resp = conn.getresponse()
    body = resp.read().decode(errors="replace")
    conn.close()
    return resp.status, body, resp


TRAVERSALS = [
    "/../../etc/passwd", "/static/../../secret.txt", "/static/..%2f..%2fsecret.txt", "/%2e%2e/%2e%2e/etc/passwd",
    "/static/%2e%2e%2f%2e%2e%2fdata.py", "/static//etc/passwd", "/static/app.js/..", "/static/%252e%252e/x",
    "/api/doc?key=repo/texts/..%2F..%2F..%2Foutside", "/api/doc?key=repo/texts/linked",
    "/api/doc?key=repo%2Ftexts%2F..%252F..%252Foutside", "/api/doc?key=run/..%2Foutside",
    "/api/doc?key=run/escape", "/api/doc?key=run/linked", "/api/doc?key=game/linked/a/eval/b",
    "/api/doc?key=game/..%2F..%2Foutside/a/eval/b", "/api/doc?key=run/outside",
    "/api/doc?key=repo/texts/%2E%2E", "/api/doc?key=repo/texts/x%00y", "/api/doc?key=run/%2Fetc",
    "/api/doc?key=experiment/1%20OR%201=1", "/api/doc?key=experiments&key=run/escape",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_no_file_outside_the_run_folders_is_served(world, served, path):
    _, port = served
    status, body, _ = get(port, path)
    assert SECRET not in body and "root:" not in body
    assert status in (200, 404)


def test_no_symlink_or_ledger_named_folder_leads_outside(world, served):
    _, port = served
    for key in keys(world) + ["run/linked", "run/escape", "run/outside", "repo/texts/linked"]:
        status, body, _ = get(port, "/api/doc?key=" + quote(key, safe=""))
        assert SECRET not in body, key
    _, body, _ = get(port, "/api/doc?key=repo%2Ftexts%2Flinked")
    assert "outside the run folder" in body


@pytest.mark.parametrize("host, ok", [
    ("127.0.0.1:{port}", True), ("localhost:{port}", True), ("LOCALHOST:{port}", True),
    ("evil.example:{port}", False), ("127.0.0.1", False), ("localhost", False), ("", False),
    ("127.0.0.1:{port}.evil.example", False), ("127.0.0.1:1", False), ("attacker.localhost:{port}", False),
    ("127.0.0.1:{port}@evil.example", False),
])
def test_it_answers_only_to_its_own_host(served, host, ok):
    _, port = served
    for path in ("/", "/api/doc?key=experiments", "/static/app.js"):
        status, body, _ = get(port, path, host=host.format(port=port))
        assert (status == 200) is ok, (host, path, status)
        if not ok:
            assert status == 421 and MARK not in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT",
                                    "PROPFIND", "MKCOL", "FOO", "get"])
def test_every_method_but_get_and_head_is_refused(served, method):
    _, port = served
    status, body, resp = get(port, "/api/doc?key=experiments", method)
    assert status == 405 and MARK not in body and resp.getheader("Allow") == "GET, HEAD"


def test_get_and_head_answer_with_a_policy_that_runs_no_inline_script(served):
    _, port = served
    for method in ("GET", "HEAD"):
        status, body, resp = get(port, "/", method)
        assert status == 200 and (body == "" if method == "HEAD" else "<html" in body)
        csp = resp.getheader("Content-Security-Policy")
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert resp.getheader("X-Content-Type-Options") == "nosniff"


def test_plot_labels_are_text_and_numbers_that_are_not_numbers_are_not_drawn(world, served, browser):
    url, _ = served
    check_page(browser, url, "run/texts", route)
    labels = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.plot text, svg.plot title')).map(t => t.textContent)")
    assert any(MARK in t for t in labels)  # payload arm, comparison, repo and series names, drawn as text
    assert browser.find_elements("css selector", "svg.plot circle.point")
    check_page(browser, url, "run/leaves", route)  # every leaf a string: nothing measured, nothing drawn
    assert not browser.find_elements("css selector", "svg.plot circle.point")
    assert "unmeasured (" in browser.find_element("css selector", "main").text


def test_export_report_draws_every_payload_as_text(world, browser, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait

    from skillos.view.report import export_report

    for name in ("texts", "leaves"):
        out = tmp_path / name
        export_report(str(world["runs"] / name), out)
        browser.get("about:blank")
        browser.get((out / "report.html").as_uri())
        WebDriverWait(browser, 20).until(lambda d: d.find_element("css selector", "body").get_attribute("data-ready") == "report")
        time.sleep(0.05)
        assert browser.execute_script("return window.__xss === undefined"), name
        assert not browser.find_elements("css selector", "[data-xss], img[src='x'], iframe, svg[onload]"), name
        assert MARK in browser.find_element("css selector", "body").text
        # no payload closes the page's data block: it reads back whole, equal to data.json
        blob = (out / "report.html").read_text().split('type="application/json">', 1)[1].split("</script>", 1)[0]
        assert json.loads(blob) == json.loads((out / "data.json").read_text())


def test_the_viewer_names_no_flag_that_does_not_exist():
    from conftest import ROOT

    app = (ROOT / "toolkit" / "view" / "static" / "app.js").read_text()
    assert "--person" not in app and "skillos ledger goal TEXT" in app
