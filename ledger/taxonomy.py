"""The failure taxonomy, as data: the seven categories of the reference audit of a SkillOS
reproduction, and its cross-cutting failure modes, each with a one-line description.

The first seven modes are named as in the audit; the rest name the incidents the audit and this
project's issues describe (1 of 9 positions measured, an outage scored as an effect, a stale
baseline, idle GPUs, a correction lost after a context compaction, ...).
"""

CATEGORIES = {
    "harness-bug": "a harness bug that corrupted a measurement",
    "wrong-claim": "a claim stated confidently that the evidence did not support",
    "wasted-compute": "compute spent that produced nothing usable (idle, crashed, duplicated)",
    "bad-reasoning": "a wrong inference from correct data",
    "process": "a step of the research process skipped or done out of order",
    "statistical": "a statistical error: no control, no correction, underpowered, wrong test",
    "near-miss": "caught before it did damage; recorded so the catch is repeatable",
}

MODES = {
    "silent-sentinel": "sentinel that does not say why: a placeholder value with no reason attached",
    "circular-health-check": "health metrics checked against each other, never against ground truth",
    "comment-as-behaviour": "a dependency's comment taken as its behaviour",
    "symptom-sized-fix": "fix sized to the symptom, not to the cause",
    "partial-artifact": "partial artifact read as a result",
    "test-split-selection": "cross-epoch comparison / selecting on the test split",
    "stale-note": "stale note outranked a fresh measurement",
    "missing-as-number": "a missing measurement became a number (an error scored as a failure or 0)",
    "partial-denominator": "measured on a subset (1 of 9 positions) and reported as the whole",
    "stale-control": "compared against a baseline measured at another time or on other code",
    "no-power-analysis": "an effect claimed or denied without the minimum detectable effect",
    "job-not-box": "watched the job's own health, not the machine (GPUs idle while 'running')",
    "lost-correction": "a corrected claim came back after a context boundary",
    "surface-mismatch": "trained on one interface, evaluated on another (tools, prompts, parsers)",
}

DETECTORS = ("gate", "watchdog", "person", "agent", "toolkit")
STATUSES = ("open", "fixed", "verified")
KINDS = ("scientific", "operational")
# what a fix may promise to move: numbers a run measures and `ledger verify-fix` can compare
# (success and unmeasured per game: McNemar; coerced actions per step of a game: a sign test over games)
MEASURED_METRICS = ("success_rate", "coercion_rate", "unmeasured_rate")
