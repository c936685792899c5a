"""Alerts to the tracker a config reports to: a launch the gates refused, a canary's verdict.

trackio is the tracker with alerts (`trackio.alert`: printed, stored in the project's local
database, shown in its dashboard, POSTed to a webhook when TRACKIO_WEBHOOK_URL or trackio's
settings name one). An alert is sent only when `training.report_to` names trackio, into the
project named after the experiment, as a short run of its own (`skillos-<kind>`), so a person
watching the dashboard of a training sees why a launch never started. An alert that could not be
sent (trackio not installed, its database unwritable) is said in one line, never silently lost;
the refusal or the verdict itself stands either way.
"""

from __future__ import annotations

import contextlib
import sys

LEVELS = ("info", "warn", "error")


def wanted(cfg) -> bool:
    """Whether the config reports to trackio."""
    return "trackio" in cfg.training.reporters()


def send(cfg, kind: str, title: str, text: str, level: str, echo=None) -> dict | None:
    """One alert on a run `skillos-<kind>` of the experiment's trackio project; None when the
    config does not report to trackio, else {project, run, sent, why}."""
    if not wanted(cfg):
        return None
    if level not in LEVELS:
        raise ValueError(f"alert level {level!r} is not one of {', '.join(LEVELS)}")
    project, run = cfg.experiment.name, f"skillos-{kind}"
    try:
        import trackio
    except ImportError:
        return _unsent(project, run, "trackio is not installed (pip install trackio)", echo)
    try:  # trackio prints its progress on stdout, which carries a command's --json report
        with contextlib.redirect_stdout(sys.stderr):
            trackio.init(project=project, name=run, embed=False)
            try:
                trackio.alert(title, text=text, level=getattr(trackio.AlertLevel, level.upper()))
            finally:
                trackio.finish()
    except Exception as exc:  # a tracker's failure must not turn a refusal into a crash
        return _unsent(project, run, f"{type(exc).__name__}: {str(exc)[:200]}", echo)
    return {"project": project, "run": run, "sent": True, "why": None}


def _unsent(project: str, run: str, why: str, echo) -> dict:
    if echo is not None:
        echo(f"trackio alert not sent ({why})")
    return {"project": project, "run": run, "sent": False, "why": why}
