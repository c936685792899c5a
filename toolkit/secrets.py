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


def _env_secrets() -> list[str]:
    """Values of environment variables whose names say they are secrets, or that a config named."""
    found = {v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8}
    found |= {os.environ[k] for k in _KEY_VARS if len(os.environ.get(k, "")) >= MIN_KEY_CHARS}
    return sorted(found, key=len, reverse=True)


def redact_text(text: str | None) -> str | None:
    if text is None:
        return None
    if not isinstance(text, str):
        return text
    for value in _env_secrets():
        text = text.replace(value, REDACTED)
    return _SECRET_VALUE.sub(REDACTED, text)


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
