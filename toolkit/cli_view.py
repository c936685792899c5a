"""`skillos view`: the read-only web page over the ledger and run folders, or its static export."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from skillos.cli_common import HOME, RUNS, emit

app = typer.Typer(help="A local, read-only web page over the ledger and run folders.",
                  invoke_without_command=True)


@app.callback()
def view(
    home: Optional[Path] = HOME,
    runs: Optional[Path] = RUNS,
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (default this machine only)."),
    port: int = typer.Option(8765, "--port", help="Port to listen on (0: any free port)."),
    export_dir: Optional[Path] = typer.Option(None, "--export", help="Write every page as a static site "
                                              "(HTML + JSON) to this folder instead of serving."),
):
    """Experiments, arms with their statistics, every game's trajectory and retrieved skills, skill
    repos as they evolved, sweeps, optimize candidates, failures. Never writes to the ledger."""
    from skillos import view as viewer
    from skillos.cli_render import site_lines

    if export_dir is not None:
        result = viewer.export_site(export_dir, home, runs, echo=lambda line: typer.echo(line, err=True))
        emit(result, False, site_lines)
        return
    try:
        viewer.serve(home, runs, host, port, on_ready=lambda url: typer.echo(f"skillos view: {url} (Ctrl-C to stop)", err=True))
    except KeyboardInterrupt:
        pass
