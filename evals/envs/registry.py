"""Environments by `env.name`: what the runner, the eval, training and the gates need from one.

An environment is an object with

* `name`, and `curator_system`: the curator's instructions for this domain (eval and training);
* `load_tasks(cfg, split, n, progress=None)`: the tasks of a split, each with `id`, `path`,
  `task`, `task_type` and `content_hash` (the runner plays them; the eval checks hashes for
  train/held-out overlap); a missing data file is a one-line SkillosError;
* `make_env(tasks=())`: a fresh game env (`load(path)`, `reset()`, `step(action)`, `task`) that
  can play those tasks; one per game in flight. An observation with no admissible commands
  takes free text (a reasoning answer), so nothing is coerced;
* `make_executor(config)` and `make_curator(config, horizon=None)`: the backends for this
  domain (the heuristic ones know its text; model backends get its prompts);
* `group_sizes(cfg)`: (smallest, largest) |G| of a curator-training group;
* `describe(cfg, split)`: where a split's tasks come from, for the report;
* `turns(cfg)`: the executor turns one task may take (household: env.max_steps; reasoning: 1);
* `reference` and `max_steps`: what a config made for another environment takes when a
  cross-domain sweep retargets it here (its reference table and turn limit).

Entries are imported on first use, so naming one never loads another's engine. A second
environment plugs in as one entry of ENVIRONMENTS (skillos/registry.py, beside the backends and
trainers), never through `if env.name == ...` in the callers.
"""

from __future__ import annotations

from skillos.errors import SkillosError
from skillos.registry import ENVIRONMENTS, load


def environment(name_or_cfg):
    """The environment of a name or of a config (its env.name)."""
    name = getattr(getattr(name_or_cfg, "env", None), "name", name_or_cfg)
    if name not in ENVIRONMENTS:
        raise SkillosError(f"env.name {name!r} is not an environment; use one of {', '.join(ENVIRONMENTS.names())}")
    return load(ENVIRONMENTS[name].target)
