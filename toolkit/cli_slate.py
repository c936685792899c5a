"""`skillos slate ...`: SkillGate's skill-slate eval and the frozen-protocol comparison.
The CLI parses, calls one library function (evals/slate_eval.py), and renders."""

from __future__ import annotations

from pathlib import Path
from typing import List

import typer

from skillos.cli_common import JSON, NEW_OUT, OVERRIDE, SET, echo_err, emit, load_config
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


@app.command("eval")
def eval_cmd(
    config: Path = typer.Argument(..., help="A config with a skillgate.slate_repo."),
    out: Path = NEW_OUT,
    checkpoint: List[str] = typer.Option([], "--checkpoint", help="NAME=PATH: a trained executor "
                                         "checkpoint played as arm NAME (backend hf)."),
    override: List[str] = OVERRIDE,
    set_: List[str] = SET,
    as_json: bool = JSON,
):
    """Play the config's executor and each checkpoint on the held-out games with frozen slates."""
    from skillos import api, gates
    from skillos.cli_render import slate_lines

    report = api.evaluate_slate(load_config(config, set_), out=out, checkpoints=_checkpoints(checkpoint),
                                overrides=gates.parse_overrides(override), echo=echo_err)
    emit(report, as_json, slate_lines)


@app.command("compare")
def compare_cmd(
    run_a: Path = typer.Argument(..., help="A slate eval folder (the control)."),
    run_b: Path = typer.Argument(..., help="A slate eval folder."),
    as_json: bool = JSON,
):
    """Compare two slate eval runs; refused unless their pins (task set, repeats, seed, prompt and
    tool-schema hashes, skill snapshot) agree."""
    from skillos.cli_render import slate_lines
    from skillos.evals.slate_eval import compare_runs

    from skillos.config.eval import EvalConfig

    e = EvalConfig()  # the schema's statistics settings: two run folders carry no config
    emit(compare_runs(run_a, run_b, e.alpha, e.power, e.bootstrap), as_json, slate_lines)
