"""Where the selector's trainers take the keys they read differently from the curator's
(`gate check --trace`): a rollout is one slate task rewarded by its outcome, so the curator's
groups and reward weights reach no code, and a slate episode has its own length. (What the slate
environment itself says, that its executor keeps its whole conversation and plays no retrieval,
the gates read from the environment the trainer's rollouts play.) The gates ask these first for a
config whose skillgate.trainer is one of the selector's (skillos.registry.METHODS); a None leaves
the key to their generic resolvers.
"""

from __future__ import annotations

import tempfile

from skillos.evals.envs.registry import environment
from skillos.tracing import not_used, resolver, row

@resolver(r"^training\.(group_size|grouping)$")
def groups(t, key, value):
    return not_used(key, value, f"skillgate.trainer {t.trainer} plays one task per rollout")


@resolver(r"^training\.curriculum$")
def curriculum(t, key, value):
    """interleaved orders the slate tasks (types taking turns, unshuffled) and none leaves them to
    TRL's shuffle, as the curator's resolver reads it; easy_first has no meaning for one task per row."""
    if value not in ("none", "interleaved"):
        return not_used(key, value, f"skillgate.trainer {t.trainer}: one slate task per row, shuffled; only "
                                    "interleaved orders them")
    args = t.args()
    unshuffled = getattr(args, "shuffle_dataset", True) is False
    return row(key, value, "training/selector/grpo.dataset_rows(curriculum=) and GRPOConfig.shuffle_dataset", value,
               f"shuffle_dataset {getattr(args, 'shuffle_dataset', None)}", applied=unshuffled == (value != "none"))


@resolver(r"^reward\.lambda_(fc|cnt|comp)$")
def reward(t, key, value):
    return not_used(key, value, f"skillgate.trainer {t.trainer}: the reward is the game outcome")


@resolver(r"^env\.max_steps$")
def max_steps(t, key, value):
    if not t.cfg.training.is_set():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        setup = environment("slate").make_slate_setup(t.cfg, [], tmp)
    return row(key, value, "SlateSetup.max_steps (actions per slate episode)", setup.max_steps)
