"""Where text-space optimization takes the keys of its own config section (`gate check --trace`):
its acceptance gate's arguments. SkillOpt has no weight trainer (no skillgate.trainer of its own),
so the gates ask these for every config (skillos.registry.METHODS); they match only `optimize.*`
keys, which no other code reads.
"""

from __future__ import annotations

from skillos.tracing import resolver, row
from skillos.training.textopt.optimize import gate_args


@resolver(r"^optimize\.gate\.(?P<name>mode|k|max_unmeasured)$")
def acceptance_gate(t, key, value, name):
    arrived = dict(zip(("mode", "k", "max_unmeasured"), gate_args(t.cfg)))[name]
    return row(key, value, "evals/stats.accept_candidate: every candidate's acceptance (training/textopt/optimize.gate_args)",
               arrived)
