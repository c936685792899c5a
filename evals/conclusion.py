"""The default conclusion of an experiment, written from the numbers when its eval finishes: each
arm's verdict in the words of `evals/stats.py:verdicts` (copied, never rephrased), the family it
was judged in and its size, the best arm with the best-of-n caveat, and what the seeds say.

It is recorded in the ledger as written by skillos (actor `skillos`); a person or an agent adds
their own with `skillos ledger experiments conclude`, beside it: the ledger never lets a later
conclusion replace it (ledger/store.py: `corrected`)."""

from __future__ import annotations
from skillos.ledger.store import SKILLOS

BEST_CAVEAT = ("best of {n} arms, picked on the same games it is scored on: its lift is optimistic "
               "(confirm it on fresh games before claiming it)")


def text(result: dict) -> str:
    """The conclusion of one eval report (`evals/report.build`), one line per fact."""
    family = result["family"]
    lines = [f"{c['treatment']} vs {c['control']}: {c['verdict']['line']}" for c in result["comparisons"]]
    correction = result["comparisons"][0]["verdict"]["correction"] if result["comparisons"] else "none"
    lines.append(f"family: {family['name']}, {family['size']} comparison(s), corrected with {correction}")
    best, caveat = best_arm(result["comparisons"])
    if best is not None:
        lines.append(f"best arm: {best['treatment']} ({best['treatment_rate']:.1%} vs {best['control_rate']:.1%} "
                     f"for {best['control']}; verdict {best['verdict']['label']}); {caveat}")
    else:
        lines.append("best arm: none measured")
    lines.append(f"seeds: one (env.seed={result['env']['seed']}); whether another seed agrees is not measured")
    return "\n".join(lines)


def best_arm(rows: list) -> tuple:
    """The measured comparison row with the highest treatment rate, and the caveat its pick carries
    (best of n, scored on the games it was picked on); (None, None) when none was measured."""
    measured = [r for r in rows if r["treatment_rate"] is not None]
    if not measured:
        return None, None
    caveat = BEST_CAVEAT.format(n=len(measured)) if len(measured) > 1 else "the only arm compared"
    return max(measured, key=lambda r: r["treatment_rate"]), caveat


def write(ledger, experiment_id: int, result: dict) -> str:
    """Record the default conclusion of an eval's experiment (actor skillos); returns its text."""
    return record(ledger, experiment_id, text(result))


def record(ledger, experiment_id: int, words: str) -> str:
    """A conclusion skillos wrote (an eval's, a matrix's), as the experiment's: actor skillos."""
    current = ledger.corrected("experiments", ledger.row("experiments", experiment_id))
    if any(c["by"] == SKILLOS and c["text"] == words for c in current["conclusions"]):
        return words  # a resumed run that played nothing new: the same words, not a second copy
    ledger.correct("experiments", experiment_id, "conclusion", "written by skillos from the verdicts when the "
                   "eval finished", value=words, actor=SKILLOS)
    return words
