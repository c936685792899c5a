"""Keep secrets out of the ledger: API keys and tokens are redacted from every text and every
config snapshot before a row is written."""

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


def _env_secrets() -> list[str]:
    """Values of environment variables whose names say they are secrets."""
    return sorted((v for k, v in os.environ.items() if _SECRET_NAME.search(k) and len(v) >= 8),
                  key=len, reverse=True)


def redact_text(text: str | None) -> str | None:
    if text is None:
        return None
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
