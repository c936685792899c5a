"""`skillos view`: a local, read-only web page over the ledger and run folders.

A stdlib ThreadingHTTPServer serves the page (static HTML/JS/CSS shipped in the package: no
CDN, no build step) and one JSON endpoint, /api/doc?key=KEY (see data.py). It binds 127.0.0.1
unless told otherwise, answers GET and HEAD only (every other method: 405), and only to a Host
header naming the address it listens on (127.0.0.1:PORT or localhost:PORT, or the --host given):
a page elsewhere cannot reach it through a DNS name rebound to this machine. Every answer
carries a Content-Security-Policy that runs no inline script, so a value that slipped past the
page's escaping would still run nothing. `export` writes the same page with every document
beside it, as a static site that opens from disk (data loads through <script> tags, which
browsers allow on file://, unlike fetch), under the same policy in a <meta> tag.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from skillos.errors import SkillosError
from skillos.files import replaced_folder
from skillos.secrets import redact_text
from skillos.view.data import Source
from skillos.safety import Ticker

ASSETS = ("index.html", "plot.js", "app.js", "style.css")
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
         ".css": "text/css; charset=utf-8"}
EXPORT_MARK = ".skillos-view"  # a folder holding this is an export we may replace
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
METHODS = ("GET", "HEAD")


def asset(name: str) -> bytes:
    return resources.files("skillos.view").joinpath("static", name).read_bytes()


def safe_doc(source: Source, key: str) -> dict:
    """A document, or one that names what went wrong: the page shows it instead of going blank."""
    try:
        return source.doc(key)
    except Exception as exc:  # noqa: BLE001 - a viewer bug must show on the page, not as a 500
        return {"kind": "error", "key": key, "problems": [f"could not read {key!r}: {type(exc).__name__}: {exc}"]}


def make_handler(source: Source):
    class Handler(BaseHTTPRequestHandler):
        server_version = "skillos-view"

        def log_message(self, *args):  # quiet: the terminal shows the address, not every request
            pass

        def parse_request(self) -> bool:
            """Before any method runs: GET and HEAD only, and only to this server's own Host."""
            if not super().parse_request():
                return False
            if self.command not in METHODS:
                self._send(405, b"read-only: GET and HEAD only", "text/plain", {"Allow": ", ".join(METHODS)})
                return False
            host = (self.headers.get("Host") or "").strip().lower()
            if host not in getattr(self.server, "allowed_hosts", ()):
                self._send(421, b"this server answers only to its own address (Host header refused)", "text/plain")
                return False
            return True

        def _send(self, status: int, body: bytes, ctype: str, headers: dict | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("Content-Security-Policy", CSP)
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("X-Frame-Options", "DENY")
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if status >= 400:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_GET(self):
            url = urlparse(self.path)
            if url.path in ("/", "/index.html"):
                return self._send(200, asset("index.html"), TYPES[".html"])
            if url.path.startswith("/static/") and url.path[8:] in ASSETS:
                name = url.path[8:]
                return self._send(200, asset(name), TYPES[Path(name).suffix])
            if url.path == "/api/doc":
                key = parse_qs(url.query).get("key", ["experiments"])[0]
                body = redact_text(json.dumps(safe_doc(source, key), default=str)).encode()
                return self._send(200, body, "application/json")
            self._send(404, b"not found", "text/plain")

        do_HEAD = do_GET

    return Handler


def make_server(source: Source, host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    try:
        server = ThreadingHTTPServer((host, port), make_handler(source))
    except OSError as exc:
        raise SkillosError(f"cannot listen on {host}:{port} ({exc.strerror}); choose another --port") from None
    server.daemon_threads = True
    port = server.server_address[1]
    names = {"127.0.0.1", "localhost"}
    if host not in ("", "0.0.0.0", "::"):
        names.add(f"[{host}]" if ":" in host else host.lower())
    server.allowed_hosts = {f"{name}:{port}" for name in names}
    return server


def data_file(index: int) -> str:
    return f"data/d{index}"


def export(source: Source, out: Path, echo=None) -> dict:
    """Write every page's document and the page itself to `out` (replaced whole: written to a
    temporary folder first, then renamed into place). Returns {"pages": n, "problems": m}."""
    with replaced_folder(Path(out), EXPORT_MARK, "skillos view export") as tmp:
        (tmp / "data").mkdir()
        (tmp / "static").mkdir()
        for name in ASSETS[1:]:
            (tmp / "static" / name).write_bytes(asset(name))
        (tmp / "static" / "export.js").write_text("window.SKILLOS_STATIC = true;\n")
        page = asset("index.html").replace(b"<!--static-->", b'<script src="static/export.js"></script>')
        (tmp / "index.html").write_bytes(page)

        manifest, problems = {}, 0
        keys = list(dict.fromkeys(source.keys()))
        tick = Ticker(echo, "view --export: pages written", len(keys))
        for index, key in enumerate(keys):
            tick(index)
            doc = safe_doc(source, key)
            problems += len(doc.get("problems", []))
            text = redact_text(json.dumps(doc, default=str))  # a key planted in a run file stays out
            (tmp / f"{data_file(index)}.json").write_text(text)
            # the same document as a script, for file:// where fetch() is refused; "</" escaped
            # so a skill's text cannot close the script
            script = text.replace("</", "<\\/")
            (tmp / f"{data_file(index)}.js").write_text(f"window.SKILLOS_DOCS[{json.dumps(key)}] = {script};\n")
            manifest[key] = data_file(index)
        tick(len(keys))
        (tmp / "data" / "manifest.js").write_text(f"window.SKILLOS_MANIFEST = {json.dumps(manifest)};\n")
        (tmp / "data" / "manifest.json").write_text(json.dumps(manifest))
    return {"out": str(Path(out)), "pages": len(manifest), "problems": problems}
