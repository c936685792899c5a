"""skillos.view: a local, read-only web page over the ledger and run folders (`skillos view`),
its static export (`skillos view --export DIR`), an experiment or a sweep as a self-contained
report with its plots and CSV files (`skillos export report`), and runs as inspect_ai logs
(`skillos export inspect`)."""

from __future__ import annotations

from pathlib import Path

from skillos.view.data import Source
from skillos.view.report import export_report
from skillos.view.server import export, make_server

__all__ = ["Source", "export", "export_report", "export_site", "make_server", "serve"]


def serve(home: Path | None = None, runs: Path | None = None, host: str = "127.0.0.1", port: int = 8765,
          on_ready=None) -> None:
    """Serve the viewer until interrupted; `on_ready(url)` is called once it listens."""
    server = make_server(Source(home, runs), host, port)
    if on_ready:
        on_ready(f"http://{host}:{server.server_address[1]}/")
    try:
        server.serve_forever(poll_interval=0.5)
    finally:
        server.server_close()


def export_site(out: Path, home: Path | None = None, runs: Path | None = None, echo=None) -> dict:
    """Every page as a static site in `out` (HTML + JSON) that opens from disk; `echo` gets a
    progress line per 10% of the pages or per 10 s."""
    return export(Source(home, runs), out, echo)
