"""`skillos export report TARGET OUT`: an experiment or a run (an eval or a sweep) as a folder a
person can attach to a paper draft: report.html with the viewer's plots (opens from disk: no
server, no network, every script and style inline and pinned by hash in its CSP), and the
numbers the plots draw as CSV, with their denominators and verdict words: arms.csv,
comparisons.csv, sweep.csv (a sweep), training.csv (a training run), and data.json (the one
document the page and the CSV files are both written from).

The folder is written beside OUT under a temporary name and renamed into place: a refused
target or a failure leaves nothing behind, and an earlier report is replaced whole.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
from pathlib import Path

from skillos.errors import SkillosError
from skillos.files import replaced_folder
from skillos.evals.run_folder import REPORT
from skillos.secrets import redact_text
from skillos.view.data import Source
from skillos.view.server import asset
from skillos.ledger import Ledger

MARK = ".skillos-report"  # a folder holding this is a report we may replace

ARMS = ("run", "arm", "attempted", "measured", "unmeasured", "successes", "rate", "rate_ci_low", "rate_ci_high",
        "unmeasured_reason")
COMPARISONS = ("run", "treatment", "control", "n_paired", "n_dropped", "b", "c", "control_rate", "treatment_rate",
               "difference", "ci_low", "ci_high", "mde", "p_value", "p_adjusted", "correction", "family", "verdict",
               "unmeasured_reason")
SWEEP = ("run", "repo", "step", "successes", "measured", "rate", "rate_ci_low", "rate_ci_high", "control",
         "control_successes", "control_measured", "control_rate", "difference", "ci_low", "ci_high", "mde",
         "p_adjusted", "n_paired", "n_dropped", "verdict", "unmeasured_reason")
TRAINING = ("run", "panel", "series", "step", "value")


def export_report(target: str, out: Path, home: Path | None = None, runs: Path | None = None) -> dict:
    """Write the report of `target` (a run folder with report.json, or an experiment id or name
    in the ledger at HOME) to the folder `out`; returns what was written, with its counts."""
    data = document(str(target), home, runs)
    tables = {"arms.csv": (ARMS, arm_rows(data)), "comparisons.csv": (COMPARISONS, comparison_rows(data))}
    if any(rep.get("sweep") for rep in data["reports"]):
        tables["sweep.csv"] = (SWEEP, sweep_rows(data))
    if data["training"]:
        tables["training.csv"] = (TRAINING, training_rows(data))
    with replaced_folder(Path(out), MARK, "skillos report") as tmp:
        text = redact_text(json.dumps(data, indent=1, default=str))  # a key planted in a run file stays out
        (tmp / "data.json").write_text(text + "\n")
        (tmp / "report.html").write_text(page(json.loads(text)))
        for name, (columns, rows) in tables.items():
            (tmp / name).write_text(redact_text(csv_text(columns, rows)))
    return {"out": str(Path(out)), "target": data["target"], "kind": data["kind"],
            "files": ["report.html", "data.json", *tables], "rows": {name: len(rows) for name, (_, rows) in tables.items()},
            "problems": len(data["problems"])}


def document(target: str, home, runs) -> dict:
    """The report's numbers: a run folder's own files, or an experiment's from the ledger and its
    run folders (under RUNS, as the viewer reads them). A bad target is a one-line error."""
    source = Source(home, runs)
    folder = Path(target)
    if folder.is_dir():
        problems: list = []
        folder = folder.resolve()  # "." has a name once resolved
        report, training = Source(home, folder.parent).folder_plots(folder.name, folder, problems)
        if (folder / REPORT).is_file() and report is None:
            raise SkillosError(f"{folder / REPORT}: no comparisons to report ({'; '.join(problems) or 'not an eval report'})")
        if report is None and training is None:
            raise SkillosError(f"{target}: no {REPORT} and no training log (checkpoint-*/trainer_state.json) in this "
                               "folder: not a finished eval, sweep or training run folder")
        kind = "training" if report is None else "sweep" if report.get("sweep") else "eval"
        return {"kind": kind, "target": str(folder), "title": f"{kind} run {folder.name}",
                "reports": [report] if report else [], "training": [training] if training else [],
                "problems": problems}
    exp_id = experiment_id(source, target)
    doc = source.experiment(str(exp_id))
    exp = doc.get("experiment") or {}
    if not doc["reports"] and not doc["training"]:
        runs = doc["runs"]
        imported = [r for r in runs if isinstance(r.get("config"), dict) and "imported" in r["config"]]
        if runs and len(imported) == len(runs):
            raise SkillosError(f"experiment #{exp_id}: its {len(runs)} runs were imported (skillos import): they have "
                               f"no run folder to report; re-test them with `skillos compare ARM --control ARM --family "
                               f"{exp.get('name', exp_id)}`")
        why = "; ".join(doc["problems"]) or (f"its {len(runs)} runs recorded no run folder" if runs else "no run recorded")
        raise SkillosError(f"experiment #{exp_id}: none of its run folders under {source.runs} has a {REPORT} or a "
                           f"training log yet ({why}); nothing to report")
    kind = "sweep" if any(r.get("sweep") for r in doc["reports"]) else "experiment"
    return {"kind": kind, "target": f"experiment #{exp_id}", "title": f"experiment #{exp_id} {exp.get('name', '')}",
            "hypothesis": exp.get("hypothesis"), "valid": exp.get("valid"), "invalid_reason": exp.get("invalid_reason"),
            "reports": doc["reports"], "training": doc["training"], "problems": doc["problems"]}


def experiment_id(source: Source, target: str) -> int:
    if not source.ledger_path.is_file():
        raise SkillosError(f"{target}: not a run folder, and there is no ledger at {source.ledger_path} to find "
                           "an experiment in (--home)")

    ledger = Ledger.read_only(source.ledger_path)
    try:
        rows = ledger.rows("experiments")
    finally:
        ledger.close()
    wanted = target.removeprefix("#")
    ids = [r["id"] for r in rows if str(r["id"]) == wanted] or [r["id"] for r in rows if r["name"] == target]
    if len(ids) > 1:
        raise SkillosError(f"{target}: {len(ids)} experiments have this name (ids {', '.join(map(str, ids))}); "
                           "give the id")
    if not ids:
        raise SkillosError(f"{target}: neither a run folder nor an experiment id or name in {source.ledger_path}")
    return ids[0]


# -- the CSV files: one row per drawn point, every denominator beside its rate ---------------------
def arm_rows(data: dict) -> list[dict]:
    return [{"run": rep["rid"], "arm": a["label"], "attempted": a["attempted"], "measured": a["n"],
             "unmeasured": a["unmeasured_games"], "successes": a["successes"], "rate": a["rate"],
             "rate_ci_low": a["lo"], "rate_ci_high": a["hi"], "unmeasured_reason": a["unmeasured"]}
            for rep in data["reports"] for a in rep["plots"].get("arms", [])]


def comparison_rows(data: dict) -> list[dict]:
    return [{"run": rep["rid"], "treatment": f["label"], "control": f["control"], "n_paired": f["n_paired"],
             "n_dropped": f["n_dropped"], "b": f["b"], "c": f["c"], "control_rate": f["control_rate"],
             "treatment_rate": f["treatment_rate"], "difference": f["effect"], "ci_low": f["lo"], "ci_high": f["hi"],
             "mde": f["mde"], "p_value": f["p_value"], "p_adjusted": f["p_adjusted"], "correction": f["correction"],
             "family": f["family"], "verdict": f["verdict"], "unmeasured_reason": f["unmeasured"]}
            for rep in data["reports"] for f in rep["plots"].get("forest", [])]


def sweep_rows(data: dict) -> list[dict]:
    rows = []
    for rep in data["reports"]:
        sweep = rep.get("sweep") or {}
        control = sweep.get("control") or {}
        for p in sweep.get("points", []):
            rows.append({"run": rep["rid"], "repo": p["label"], "step": p["step"], "successes": p["successes"],
                         "measured": p["n"], "rate": p["rate"], "rate_ci_low": p["lo"], "rate_ci_high": p["hi"],
                         "control": control.get("label"), "control_successes": control.get("successes"),
                         "control_measured": control.get("n"), "control_rate": control.get("rate"),
                         "difference": p["difference"], "ci_low": p["ci_low"], "ci_high": p["ci_high"], "mde": p["mde"],
                         "p_adjusted": p["p_adjusted"], "n_paired": p["n_paired"], "n_dropped": p["n_dropped"],
                         "verdict": p["verdict"], "unmeasured_reason": p["unmeasured"]})
    return rows


def training_rows(data: dict) -> list[dict]:
    return [{"run": t["rid"], "panel": panel["title"], "series": s["label"], "step": p["x"], "value": p["y"]}
            for t in data["training"] for panel in t["panels"] for s in panel["series"] for p in s["points"]]


def cell(value):
    """A CSV cell: None is empty (unmeasured, never 0); a float as Python's repr, so it reads back
    equal to the JSON; a text a spreadsheet would run as a formula (= + - @) quoted with '."""
    if value is None:
        return ""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return repr(value) if isinstance(value, float) else value


def csv_text(columns, rows) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([cell(row[c]) for c in columns])
    return buf.getvalue()


# -- the page --------------------------------------------------------------------------------------
def _hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def page(data: dict) -> str:
    """report.html: the data as an inert JSON block ('<' escaped, so no text can close it), the
    plot and page scripts and the style inline, each allowed by its hash and nothing else."""
    style = asset("style.css").decode()
    scripts = [asset("plot.js").decode(), asset("report.js").decode()]
    blob = json.dumps(data, default=str).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    csp = (f"default-src 'none'; script-src {' '.join(_hash(s) for s in scripts)}; style-src {_hash(style)}; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    title = data["title"].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return ("<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
            f"<title>skillos report: {title}</title>\n<style>{style}</style>\n</head>\n<body>\n"
            "<main id=\"app\"><p>This report draws its plots with JavaScript; the numbers are in the CSV files "
            "beside it.</p></main>\n"
            f"<script id=\"report-data\" type=\"application/json\">{blob}</script>\n"
            + "".join(f"<script>{s}</script>\n" for s in scripts) + "</body>\n</html>\n")
