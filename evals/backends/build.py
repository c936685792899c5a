"""An executor or a curator for the backend a config section names: the one place that tells the
no-model backend (heuristic) from a model backend and refuses a name that is neither.

Each environment (evals/envs/<name>/environment.py) calls these with its own heuristic and its own
model executor (the household's LLMExecutor in envs/household/llm.py, the reasoning env's
one-turn reasoner, the slate's tool-calling executor): none is another's silent default. So a new model backend is one entry
of BACKENDS (skillos/registry.py) that every environment builds unchanged, and a new environment
brings its heuristic without copying the check.
"""

from __future__ import annotations

from skillos.config.backend import decoding_of
from skillos.errors import SkillosError
from skillos.registry import BACKENDS, model_backends
from skillos.evals.backends.llm_curator import LLMCurator


def _uses_a_model(section: str, config) -> bool:
    entry = BACKENDS.get(config.backend)
    if entry is None:
        no_model = " or ".join(b.name for b in BACKENDS if not b.chat)
        raise SkillosError(f"{section}.backend {config.backend!r} is not a backend; "
                           f"use {no_model} or one of {', '.join(model_backends())}")
    return entry.chat is not None


def decodings(model) -> tuple:
    """The executor.decoding values a model executor class plays: its `decodings`, or generate
    alone where it names none (it writes its answer and scores nothing)."""
    return getattr(model, "decodings", ("generate",))


def executor(config, heuristic, model):
    """`heuristic()` for the no-model backend; `model(config)` for a model backend: the
    environment's own model executor (evals/envs/<name>/), never another domain's by default.
    A decoding the model executor does not do (`decodings`) is a one-line error."""
    if not _uses_a_model("executor", config):
        return heuristic()
    decoding = decoding_of(config)
    if decoding not in decodings(model):
        raise SkillosError(f"executor.decoding {decoding}: {model.__name__} only generates its answer (it chooses "
                           "no action from a list); set executor.decoding generate")
    return model(config)


def curator(config, heuristic, horizon: int | None = None, system: str | None = None):
    """`heuristic()` for the no-model backend; for a model backend the LLM curator with the
    paper's tools (evals/backends/llm_curator.py), `horizon` the |G| a trained curator saw and
    `system` the environment's curator instructions."""
    if not _uses_a_model("curator", config):
        return heuristic()

    return LLMCurator(config, horizon, system)
