"""Redaction lives in the base layer (`skillos.secrets`) so that files and errors can redact too;
this is its old import path."""

from skillos.secrets import REDACTED, protect_key_vars, redact, redact_text  # noqa: F401
