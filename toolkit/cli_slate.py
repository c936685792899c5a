"""`skillos slate ...`: SkillGate's skill-slate eval and the frozen-protocol comparison.
The CLI parses, calls one library function (evals/slate_eval.py), and renders."""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from skillos.cli_common import SET_HELP, echo_err, load_config, print_json
from skillos.errors import SkillosError

app = typer.Typer(help="Skill-slate evals (SkillGate): selection metrics, pass@k, frozen pins.",
                  no_args_is_help=True)


def _checkpoints(values: list[str]) -> dict[str, str]:
    out = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name or not path:
            raise SkillosError(f"--checkpoint {value!r}: expected NAME=PATH")
        if not Path(path).is_dir():
            raise SkillosError(f"--checkpoint {name}: {path} is not a checkpoint folder")
        out[name] = path
    return out


def _render(report: dict, as_json: bool) -> None:
    from skillos.evals.envs.slate import render_metrics

    if as_json:
        print_json(report)
        return
    for arm, data in report["arms"].items():
        typer.echo(render_metrics(arm, data["selection"]))
        for p in data["pass"]:
            for form, label in (("protocol", "protocol (errored plays count as failures)"),
                                ("measured_only", "measured-only")):
                f = p[form]
                shown = "unmeasured" if f["pass_at_k"] is None else f"{f['pass_at_k']:.2f} / {f['pass_hat_k']:.2f}"
                typer.echo(f"  pass@{p['k']} / pass^{p['k']}, {label}: {shown} over {f['tasks']} of "
                           f"{f['of_tasks']} tasks ({f['tasks_left_out']} left out)")
    for c in report.get("pass_comparisons", []):
        for p in c["pass"]:
            d = p["difference"]["pass_at_k"]
            typer.echo(f"{c['treatment']} vs {c['control']} pass@{p['k']} (protocol form): "
                       + ("unmeasured" if d is None else f"{d:+.2f}"))
    for c in report["comparisons"]:
        diff = "unmeasured" if c["difference"] is None else f"{c['difference']:+.2f}"
        typer.echo(f"{c['treatment']} vs {c['control']} on {c['metric']}: {diff} over {c['n_paired']} pairs "
                   f"({c['n_dropped']} dropped), b/c {c['b']}/{c['c']}, p {c['p_value']}, MDE {c['mde']}")


@app.command("eval")
def eval_cmd(
    config: Path = typer.Argument(..., help="A config with a skillgate.slate_repo."),
    out: Path = typer.Option(..., "--out", help="A new folder for the rows, snapshot and report."),
    checkpoint: List[str] = typer.Option([], "--checkpoint", help="NAME=PATH: a trained executor "
                                         "checkpoint played as arm NAME (backend hf)."),
    override: List[str] = typer.Option([], "--override", help="CHECK=\"reason\": a person's override of a "
                                       "failed gate (recorded in the ledger)."),
    set_: List[str] = typer.Option([], "--set", help=SET_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
):
    """Play the config's executor and each checkpoint on the held-out games with frozen slates."""
    from skillos import api, gates

    report = api.evaluate_slate(load_config(config, set_), out=out, checkpoints=_checkpoints(checkpoint),
                                overrides=gates.parse_overrides(override), echo=echo_err)
    _render(report, as_json)


@app.command("compare")
def compare_cmd(
    run_a: Path = typer.Argument(..., help="A slate eval folder (the control)."),
    run_b: Path = typer.Argument(..., help="A slate eval folder."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
):
    """Compare two slate eval runs; refused unless their pins (task set, repeats, seed, prompt and
    tool-schema hashes, skill snapshot) agree."""
    from skillos.evals.slate_eval import compare_runs

    from skillos.config import EvalConfig

    e = EvalConfig()  # the schema's statistics settings: two run folders carry no config
    _render(compare_runs(run_a, run_b, e.alpha, e.power, e.bootstrap), as_json)
