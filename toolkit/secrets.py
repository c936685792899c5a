"""Keep secrets out of everything skillos writes: API keys and tokens are redacted from every
text and config snapshot before a ledger row, a JSONL row, a report, a log line or an error
message leaves the process: known key shapes, variables whose names say they are secrets, and
the value of every variable a config names as its key (whatever its name and shape).

The base layer (no skillos imports): files, errors and the ledger all redact through it.
"""

from __future__ import annotations

import os
import re

REDACTED = "[redacted]"
# whole name parts only: `OPENAI_API_KEY`, `hf_token`, `password`, but not `max_tokens`
_SECRET_NAME = re.compile(r"(?:^|[_\-])(api[_\-]?key|apikey|token|secret|password|passwd|"
                          r"credentials?|authorization|auth)(?:$|[_\-])", re.IGNORECASE)
_SECRET_VALUE = re.compile(
    r"(sk-ant-[A-Za-z0-9_\-]{8,}|sk-[A-Za-z0-9_\-]{16,}|hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{16,}"
    r"|AKIA[0-9A-Z]{16}|xox[abpr]-[A-Za-z0-9\-]{10,}|Bearer\s+[A-Za-z0-9._\-]{16,})"
)


# Variables a config names as holding a key (`api_key_env`, any name at all): their values are
# redacted whatever they look like. Registered when a config loads and when a backend reads its
# key; forked workers inherit the set.
_KEY_VARS: set[str] = set()
MIN_KEY_CHARS = 4  # shorter values would redact ordinary text; no real key is this short


def protect_key_vars(names) -> None:
    """Redact the values of these environment variables everywhere text leaves the process."""
    _KEY_VARS.update(n for n in names if n)


_SECRETS_CACHE: list = [None, []]  # (the environment and key names it was computed from, the values)


def _env_secrets() -> list[str]:
    """Values of environment variables whose names say they are secrets, or that a config named
    (longest first); recomputed only when the environment or the named variables change."""
    data = getattr(os.environ, "_data", None)
    key = (frozenset(data.items()) if isinstance(data, dict) else frozenset(os.environ.items()),
           frozenset(_KEY_VARS))
    if _SECRETS_CACHE[0] != key:
        found = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8}
        found |= {os.environ[k] for k in _KEY_VARS if len(os.environ.get(k, "")) >= MIN_KEY_CHARS}
        _SECRETS_CACHE[:] = [key, sorted(found, key=len, reverse=True)]
    return _SECRETS_CACHE[1]


def safe_name(name: str) -> str:
    """A name (an arm's, a run's) with a key in it, replaced by a stable stand-in: the same name
    always gives the same `[redacted-XXXXXXXX]` (a sha256 prefix), two different ones stay apart,
    and the key is neither stored nor printed; any other name as it is."""
    import hashlib

    if not isinstance(name, str) or redact_text(name) == name:
        return name
    return f"{REDACTED[:-1]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}]"


def redact_text(text: str | None) -> str | None:
    """`text` with every key in it replaced by [redacted]: the values of secret variables and
    known key shapes, also when they are written encoded (base64, standard or URL-safe; URL
    percent-encoding; JSON / unicode escapes) or split across lines (a newline, an escaped \\n,
    a line continuation, indentation between the pieces)."""
    if text is None:
        return None
    if not isinstance(text, str):
        return text
    secrets = _env_secrets()
    spans = _direct_spans(text, secrets)
    spans += _encoded_spans(text, secrets)
    if "\n" in text or "\r" in text or "\\" in text:
        spans += _split_spans(text, secrets)
    if not spans:
        return text
    out, last = [], 0
    for start, end in _merge(spans):
        out += [text[last:start], REDACTED]
        last = end
    return "".join(out) + text[last:]


def _merge(spans):
    merged = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def _direct_spans(text: str, secrets: list) -> list:
    spans = [(m.start(), m.end()) for m in _SECRET_VALUE.finditer(text)]
    for value in secrets:
        start = text.find(value)
        while start >= 0:
            spans.append((start, start + len(value)))
            start = text.find(value, start + 1)
    return spans


def _has_secret(decoded: str, secrets: list) -> bool:
    return bool(_SECRET_VALUE.search(decoded)) or any(v in decoded for v in secrets)


_B64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{16,}={0,2}")
_UNIT = r"[A-Za-z0-9._~+\-]"
# runs that start at their first escape (no leading repetition: linear time); the plain
# characters before one are added by _leftward
_PCT_RUN = re.compile(r"%[0-9A-Fa-f]{2}(?:%[0-9A-Fa-f]{2}|" + _UNIT + r")*")
_ESC_RUN = re.compile(r"(?:\\{1,2}u[0-9A-Fa-f]{4}|\\{1,2}x[0-9A-Fa-f]{2})(?:\\{1,2}u[0-9A-Fa-f]{4}|\\{1,2}x[0-9A-Fa-f]{2}|"
                      r"\\[nrt\"/\\]|" + _UNIT + r")*")
_LEFT = re.compile(_UNIT + r"*\Z")
_LEFT_ESC = re.compile(r"(?:\\[nrt\"/\\]|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|" + _UNIT + r")*\Z")


def _leftward(text: str, start: int, left: re.Pattern = _LEFT) -> int:
    """Where the run of plain (or escaped) characters that ends at `start` begins (at most 200 back)."""
    lo = max(0, start - 200)
    return left.search(text, lo, start).start()


_MIXED = re.compile(r"[a-z].*[A-Z]|[A-Z].*[a-z]")


def _b64_decode(run: str) -> str | None:
    import base64
    import binascii

    body = run.rstrip("=")
    for alphabet in ("std", "url"):
        try:
            raw = (base64.urlsafe_b64decode if alphabet == "url" else base64.b64decode)(
                body + "=" * (-len(body) % 4))
        except (binascii.Error, ValueError):
            continue
        decoded = raw.decode("utf-8", errors="ignore")
        if decoded:
            return decoded
    return None


def _encoded_spans(text: str, secrets: list) -> list:
    """Spans of base64, percent-encoded and escaped runs whose decoded text holds a key (a key
    inside an encoded run that is itself encoded again is found by decoding twice)."""
    from urllib.parse import unquote_plus

    spans = []
    for match in _B64_RUN.finditer(text):
        run = match.group()
        if any(c in run for c in "-_") and any(c in run for c in "+/"):
            continue  # two base64 alphabets at once (a path, a name): not base64
        if run.islower() or run.isupper() or not _MIXED.search(run):
            continue  # base64 of 12+ bytes mixes cases (a word, a name or a number does not)
        # a run that starts mid-quantum ("Basic" glued to its value) is tried at each offset
        for offset in range(4):
            decoded = _b64_decode(run[offset:])
            if decoded and (_has_secret(decoded, secrets) or _has_secret(_decode_once(decoded), secrets)):
                spans.append(match.span())
                break
            if decoded and offset == 0 and len(run.rstrip("=")) % 4 == 0 and _printable(decoded):
                break  # aligned and readable: not a glued prefix
    if "%" in text:
        for match in _PCT_RUN.finditer(text):
            start = _leftward(text, match.start())
            decoded = unquote_plus(unquote_plus(text[start:match.end()]))
            if _has_secret(decoded, secrets) or _has_secret(_decode_once(decoded), secrets):
                spans.append((start, match.end()))
    if "\\" in text:
        for match in _ESC_RUN.finditer(text):
            start = _leftward(text, match.start(), _LEFT_ESC)
            decoded = _unescape(text[start:match.end()])
            if decoded is not None and "\\" in decoded:  # escaped twice (an escaped string inside JSON)
                decoded = decoded + " " + (_unescape(decoded) or "")
            if decoded is not None and _has_secret(decoded, secrets):
                spans.append((start, match.end()))
    return spans


def _printable(text: str) -> bool:
    return sum(c.isprintable() for c in text) >= 0.9 * len(text)


def _decode_once(text: str) -> str:
    """One more layer: base64 runs decoded in place (a key base64'd inside a base64'd document)."""
    return _B64_RUN.sub(lambda m: _b64_decode(m.group()) or m.group(), text) if len(text) >= 16 else text


def _unescape(run: str) -> str | None:
    import codecs

    try:
        return codecs.decode(run.replace("\\/", "/"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return None


# between two pieces of a key split across lines: a newline (or an escaped one), a line
# continuation, the next line's indentation, a comment/quote continuation
_BREAK = re.compile(r"(?:[\"'][ \t]*\+?[ \t]*)?(?:\\?(?:\r?\n|\\r\\n|\\n|\\r))[ \t>#*\"'+]*")


_STARTS: dict = {}  # secrets -> the regex of a key's start followed by a line break


def _starts(secrets: list) -> re.Pattern:
    key = tuple(secrets)
    if key not in _STARTS:
        # a key broken over lines starts a token: `read-the-task-sentence` then a line break is a
        # skill name ending a frontmatter line, not `sk-...` split in two
        shapes = r"(?<![A-Za-z0-9])(?:sk-|hf_|gh[pousr]_|AKIA|xox[abpr]-|Bearer\s+)"
        heads = [shapes] + [re.escape(v[:4]) for v in secrets]  # a registered key is found anywhere
        _STARTS.clear()
        _STARTS[key] = re.compile(r"(?:" + "|".join(heads) + r")[A-Za-z0-9_\-+/=.~]{0,200}(?=" + _BREAK.pattern + ")")
    return _STARTS[key]


def _split_spans(text: str, secrets: list) -> list:
    """Keys broken over lines: around each line break that follows the start of a key (a known
    key shape, or the first characters of a secret value), the text with its line breaks (and
    the indentation after them) removed is searched; what is found maps back to the original."""
    spans = []
    for head in _starts(secrets).finditer(text):
        m = _BREAK.match(text, head.end())
        lo, hi = max(0, head.start() - 8), min(len(text), m.end() + 512)
        window = text[lo:hi]
        pieces, index, last = [], [], 0
        for b in _BREAK.finditer(window):
            pieces.append(window[last:b.start()])
            index.extend(range(lo + last, lo + b.start()))
            last = b.end()
        pieces.append(window[last:])
        index.extend(range(lo + last, lo + len(window)))
        joined = "".join(pieces)
        for start, end in _direct_spans(joined, secrets):
            span = (index[start], index[end - 1] + 1)
            if span[0] < m.start() < span[1]:  # a key broken at this break (unbroken ones are found directly)
                spans.append(span)
    return spans


def redact(obj):
    """A copy of a config-like structure with secret-named keys and secret-looking values hidden."""
    if isinstance(obj, dict):
        return {k: (REDACTED if _SECRET_NAME.search(str(k)) and obj[k] not in (None, "")
                    else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact(v) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj
