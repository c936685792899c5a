"""`skillos config explain KEY`: a config key's help, type and default, read from its dataclass
field (its section's module under config/ is the one home of both); a section lists its keys."""

from __future__ import annotations

import typer

from skillos.cli_common import JSON, emit

app = typer.Typer(help="The config schema: what a key means and its default.", no_args_is_help=True)


@app.command("explain")
def explain_cmd(
    key: str = typer.Argument(..., help="A dotted config key (eval.alpha) or a section (optimize.gate)."),
    as_json: bool = JSON,
):
    """A key's help, type and default; a section's help and each of its keys."""
    from skillos.config.schema import explain
    from skillos.cli_render import explain_lines

    emit(explain(key), as_json, explain_lines)
