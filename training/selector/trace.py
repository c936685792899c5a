"""Where the selector's trainers take the keys they read differently from the curator's
(`gate check --trace`): a rollout is one slate task rewarded by its outcome, with the slate as the
protocol, so the curator's groups, retrieval and reward weights reach no code, and the executor
keeps its whole conversation. The gates ask these first for a config whose skillgate.trainer is
one of the selector's (skillos.registry.METHODS); a None leaves the key to their generic resolvers.
"""

from __future__ import annotations

import tempfile

from skillos.evals.envs.registry import environment
from skillos.registry import NO_MODEL
from skillos.tracing import not_used, resolver, row

ONE_TASK = "plays one task per rollout"


@resolver(r"^training\.(group_size|grouping|curriculum)$")
def groups(t, key, value):
    return not_used(key, value, f"skillgate.trainer {t.trainer} {ONE_TASK}")


@resolver(r"^reward\.lambda_(fc|cnt|comp)$")
def reward(t, key, value):
    return not_used(key, value, f"skillgate.trainer {t.trainer}: the reward is the game outcome")


@resolver(r"^executor\.history_length$")
def history(t, key, value):
    if not t.cfg.training.is_set() or t.cfg.executor.backend == NO_MODEL:
        return None  # the heuristic executor, or an eval's: the gates' to say
    return not_used(key, value, environment(t.entry.rollout_env).history_unused)


@resolver(r"^retrieval\.top_k$")
def top_k(t, key, value):
    if not t.cfg.training.is_set():
        return None
    return not_used(key, value, "the slate is the protocol: SkillGate plays no retrieval")


@resolver(r"^env\.max_steps$")
def max_steps(t, key, value):
    if not t.cfg.training.is_set():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        setup = environment("slate").make_slate_setup(t.cfg, [], tmp)
    return row(key, value, "SlateSetup.max_steps (actions per slate episode)", setup.max_steps)
