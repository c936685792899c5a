"""The one statistics module every comparison calls: paired binary outcomes on the same games.

* exact McNemar p (two-sided binomial test on the discordant pairs),
* paired bootstrap CI of the difference in success rate,
* minimum detectable effect at the given power: (z_{α/2} + z_β) · sqrt(d / n), with d the
  observed share of discordant pairs and n the number of paired games,
* units with several trials or scores in [0, 1] (`compare_units`): paired by unit, trials
  averaged within it, the Wilcoxon signed-rank and exact sign tests over the per-unit
  differences, the bootstrap CI of their mean and an MDE from their observed spread,
* Holm / Benjamini-Hochberg correction within a family of comparisons,
* the Wilson score interval of one arm's success rate (what the plots draw per arm).

Only pairs where both arms were measured enter; the counts of dropped pairs are reported.
A quantity that cannot be estimated is None with a reason, never 0.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass
from statistics import NormalDist

# numpy and statsmodels are imported inside the functions that need them: the launch gates
# plan an MDE in well under a second, and statsmodels alone takes most of one to import.


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p from the discordant counts b (only treatment won) and c."""
    if b + c == 0:
        return 1.0
    from statsmodels.stats.contingency_tables import mcnemar

    return float(mcnemar([[0, b], [c, 0]], exact=True).pvalue)


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), exact: how surprising k successes in n are at rate p
    (scipy's survival function: a sum of n! terms overflows a float past n ~ 1,000)."""
    from scipy.stats import binom

    return 1.0 if k <= 0 else float(binom.sf(k - 1, n, p))


def _z(alpha: float, power: float) -> float:
    return NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)


def mde(n: int, discordant_share: float, alpha: float, power: float) -> float:
    """Smallest difference in success rate detectable with this n and discordance."""
    return float(_z(alpha, power) * math.sqrt(discordant_share / n))


def n_for_effect(effect: float, discordant_share: float, alpha: float, power: float) -> int:
    """Paired games needed for `effect` to be the MDE: the inverse of `mde`."""
    return math.ceil(discordant_share * (_z(alpha, power) / effect) ** 2)


def paired_bootstrap_ci(control, treatment, n_boot: int, seed: int,
                        level: float = 0.95) -> tuple[float, float]:
    """Percentile CI of mean(treatment - control), resampling games with replacement."""
    import numpy as np

    diff = np.asarray(treatment, dtype=float) - np.asarray(control, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diff), size=(n_boot, len(diff)))
    means = diff[idx].mean(axis=1)
    tail = (1 - level) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def rate_ci(successes, n, level: float = 0.95) -> tuple[float | None, float | None]:
    """Wilson score interval of a success rate (successes of n measured games); (None, None)
    when nothing was measured. Wilson, not the normal approximation: it stays inside [0, 1] and
    is honest at 0/n and n/n, which small arms hit often."""
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0 or not isinstance(successes, int) \
            or isinstance(successes, bool) or not 0 <= successes <= n:
        return None, None
    z = NormalDist().inv_cdf(1 - (1 - level) / 2)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def adjust(pvalues: list[float], method: str = "holm") -> list[float]:
    """Family-wise (holm) or false-discovery (fdr_bh) adjusted p-values."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(pvalues, method=method)[1]]


CI_VS_EXACT = ("the bootstrap CI excludes 0 but the exact McNemar test does not reject at alpha {alpha:g} "
               "(b/c = {b}/{c}): the percentile CI is too narrow with few discordant pairs; the exact test decides")


def ci_excludes_zero(low, high) -> bool:
    return low is not None and high is not None and (low > 0 or high < 0)


@dataclass
class Comparison:
    treatment: str
    control: str
    n_paired: int  # games measured in both arms
    n_dropped: int  # games unmeasured in either arm
    control_rate: float | None
    treatment_rate: float | None
    difference: float | None
    b: int  # treatment won, control lost
    c: int  # control won, treatment lost
    p_value: float | None
    p_adjusted: float | None
    ci_low: float | None
    ci_high: float | None
    mde: float | None
    significant: bool | None
    alpha: float
    power: float
    note: str = ""
    # Attrition: of the games both arms attempted, how many each left unmeasured, and the exact
    # sign test of the games unmeasured in one arm only (None: not computed, e.g. an old record).
    attempted: int | None = None
    control_unmeasured: int | None = None
    treatment_unmeasured: int | None = None
    attrition_p: float | None = None
    # Units with trials or scores in [0, 1] (compare_units): the test the p comes from and why,
    # the sign and Wilcoxon p, the units tied, the uninformative units (every trial in both arms
    # 0, or every one 1), and each arm's trials, measured or not. None: binary single-trial data.
    test: str | None = None
    test_reason: str = ""
    sign_p: float | None = None
    wilcoxon_p: float | None = None
    ties: int | None = None
    uninformative: int | None = None
    uninformative_units: list | None = None
    n_trials: dict | None = None
    trials_unmeasured: dict | None = None
    # "trials" where units hold several trials: attrition_p is then the sign test over the units
    # that lost more trials in one arm than in the other (a game whose losing plays error out
    # keeps its mean up, unseen by a test of whole units). None: over whole units.
    attrition_of: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def attrition(control: dict, treatment: dict) -> dict:
    """Who lost which games: over the games both arms attempted, each arm's unmeasured count and
    the exact two-sided sign test of the games unmeasured in one arm only (1.0 when none is). A
    small p means the arms lost games unevenly (a billing limit or an outage that hit one arm
    harder): the games left to compare are not the same kind in both arms."""
    common = set(control) & set(treatment)
    only_t = sum(1 for g in common if treatment[g] is None and control[g] is not None)
    only_c = sum(1 for g in common if control[g] is None and treatment[g] is not None)
    return {"attempted": len(common), "control_unmeasured": sum(control[g] is None for g in common),
            "treatment_unmeasured": sum(treatment[g] is None for g in common),
            "attrition_p": mcnemar_exact(only_t, only_c)}


def trial_attrition(control: dict, treatment: dict) -> dict:
    """Attrition over trials (unit -> its trials): the exact sign test over the units both arms
    attempted that left more trials unmeasured in one arm than in the other."""
    common = set(control) & set(treatment)
    lost = {u: (sum(t is None for t in control[u]), sum(t is None for t in treatment[u])) for u in common}
    more_t = sum(1 for c, t in lost.values() if t > c)
    more_c = sum(1 for c, t in lost.values() if c > t)
    return {"attrition_p": mcnemar_exact(more_t, more_c), "attrition_of": "trials"}


def compare(control: dict, treatment: dict, *, names=("treatment", "control"), alpha: float,
            power: float, n_boot: int) -> Comparison:
    """control/treatment: game id -> True/False/None. Pairs with a None on either side drop."""
    ids = sorted(set(control) & set(treatment))
    paired = [g for g in ids if control[g] is not None and treatment[g] is not None]
    dropped = len(set(control) | set(treatment)) - len(paired)
    base = dict(treatment=names[0], control=names[1], n_paired=len(paired), n_dropped=dropped,
                alpha=alpha, power=power, p_adjusted=None, **attrition(control, treatment))
    if not paired:
        return Comparison(**base, control_rate=None, treatment_rate=None, difference=None, b=0, c=0,
                          p_value=None, ci_low=None, ci_high=None, mde=None, significant=None,
                          note="no game was measured in both arms")
    import numpy as np

    x = np.array([bool(control[g]) for g in paired])
    y = np.array([bool(treatment[g]) for g in paired])
    b, c = int((y & ~x).sum()), int((x & ~y).sum())
    n = len(paired)
    seed = int.from_bytes(hashlib.sha256("|".join(paired).encode()).digest()[:4], "big")
    low, high = paired_bootstrap_ci(x, y, n_boot, seed)
    p = mcnemar_exact(b, c)
    note = ""
    if b + c == 0:
        effect = None
        note = "no discordant pairs: the MDE cannot be estimated from this run"
    else:
        effect = mde(n, (b + c) / n, alpha, power)
    if ci_excludes_zero(low, high) and p >= alpha:
        note = "; ".join(x for x in (note, CI_VS_EXACT.format(alpha=alpha, b=b, c=c)) if x)
    return Comparison(**base, control_rate=float(x.mean()), treatment_rate=float(y.mean()),
                      difference=float(y.mean() - x.mean()), b=b, c=c, p_value=p,
                      ci_low=low, ci_high=high, mde=effect, significant=p < alpha, note=note)


def compare_values(control: dict, treatment: dict, *, names=("treatment", "control"), alpha: float,
                   power: float, n_boot: int) -> Comparison:
    """control/treatment: game id -> a number per game (a rate within it, such as the share of
    its actions that were coerced) or None (unmeasured; the pair drops). The paired test is the
    exact sign test over the games whose value moved, which is McNemar's test when the values are
    0/1: b games went up, c went down; the CI is the paired bootstrap of the mean difference.
    No MDE: it needs the values' distribution, not only the discordant share."""
    ids = sorted(set(control) & set(treatment))
    paired = [g for g in ids if control[g] is not None and treatment[g] is not None]
    base = dict(treatment=names[0], control=names[1], n_paired=len(paired), alpha=alpha, power=power,
                n_dropped=len(set(control) | set(treatment)) - len(paired), p_adjusted=None, mde=None,
                **attrition(control, treatment))
    if not paired:
        return Comparison(**base, control_rate=None, treatment_rate=None, difference=None, b=0, c=0,
                          p_value=None, ci_low=None, ci_high=None, significant=None,
                          note="no game was measured in both arms")
    import numpy as np

    x = np.array([float(control[g]) for g in paired])
    y = np.array([float(treatment[g]) for g in paired])
    b, c = int((y > x).sum()), int((y < x).sum())
    seed = int.from_bytes(hashlib.sha256("|".join(paired).encode()).digest()[:4], "big")
    low, high = paired_bootstrap_ci(x, y, n_boot, seed)
    p = mcnemar_exact(b, c)
    return Comparison(**base, control_rate=float(x.mean()), treatment_rate=float(y.mean()),
                      difference=float(y.mean() - x.mean()), b=b, c=c, p_value=p, ci_low=low, ci_high=high,
                      significant=p < alpha, note="a sign test over per-game values: the MDE is not estimated",
                      test="sign", test_reason="a number per game: the exact sign test over the games whose value moved")


# The test a comparison's p comes from (Comparison.test; None: compare's exact McNemar), as reports name it
TEST_NAMES = {"mcnemar": "exact McNemar", "wilcoxon": "Wilcoxon signed-rank", "sign": "sign test"}


def test_name(test: str | None) -> str:
    return TEST_NAMES[test or "mcnemar"]


# -- units with trials and scores in [0, 1] --------------------------------------------------------
def trials_of(value) -> list:
    """A unit's outcomes as a list of trials: a list as given, one value as one trial; each a
    score in [0, 1] (True/False read as 1/0) or None (an unmeasured trial)."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    out = []
    for v in values:
        if v is None:
            out.append(None)
        elif isinstance(v, bool):
            out.append(1.0 if v else 0.0)
        elif isinstance(v, (int, float)) and math.isfinite(v) and 0.0 <= v <= 1.0:
            out.append(float(v))
        else:
            raise ValueError(f"outcome {v!r} is not a score in [0, 1], true/false or null")
    return out


def unit_mean(value) -> float | None:
    """A unit's mean over its measured trials (trials_of); None: no trial measured."""
    measured = [t for t in trials_of(value) if t is not None]
    return sum(measured) / len(measured) if measured else None


def mean_score(values) -> float | None:
    """An arm's mean score: the mean over its measured units of each unit's mean; None: none measured."""
    means = [m for m in map(unit_mean, values) if m is not None]
    return sum(means) / len(means) if means else None


def score_summary(values) -> dict:
    """What an arm of scored units reports beside its denominators: its mean score, its trials
    and the trials unmeasured."""
    trials = [trials_of(v) for v in values]
    return {"mean_score": mean_score(values), "trials": sum(map(len, trials)),
            "trials_unmeasured": sum(t is None for unit in trials for t in unit)}


def is_binary_single(*arms: dict) -> bool:
    """Whether every unit of every arm holds one trial scored 0, 1 or unmeasured (McNemar's case)."""
    for arm in arms:
        for value in arm.values():
            trials = trials_of(value)
            if len(trials) != 1 or trials[0] not in (None, 0.0, 1.0):
                return False
    return True


EXACT_UNITS = 50  # up to this many nonzero differences the Wilcoxon p is exact (ties included)


def wilcoxon_p(diffs: list) -> float:
    """Two-sided Wilcoxon signed-rank p over paired differences, zero differences dropped (1.0
    when none is left). Up to EXACT_UNITS nonzero differences it is exact: the null
    distribution of the positive rank sum over all 2^n sign patterns, counted with the ranks as
    they are (tied magnitudes share their mean rank), so 4 units that all moved alike give 0.125,
    never less; above that, the normal approximation with the tie correction."""
    nonzero = [d for d in diffs if d != 0]
    if not nonzero:
        return 1.0
    if len(nonzero) > EXACT_UNITS:
        from scipy.stats import wilcoxon

        return float(wilcoxon(nonzero, zero_method="wilcox", alternative="two-sided", method="approx").pvalue)
    from scipy.stats import rankdata

    doubled = [int(round(2 * r)) for r in rankdata([abs(d) for d in nonzero])]  # mean ranks are halves
    observed = sum(r for r, d in zip(doubled, nonzero) if d > 0)
    counts = {0: 1}  # doubled positive rank sum -> sign patterns reaching it
    for r in doubled:
        step = dict(counts)
        for total, ways in counts.items():
            step[total + r] = step.get(total + r, 0) + ways
        counts = step
    patterns = 2 ** len(nonzero)
    low = sum(w for t, w in counts.items() if t <= observed) / patterns
    high = sum(w for t, w in counts.items() if t >= observed) / patterns
    return min(1.0, 2 * min(low, high))


def compare_units(control: dict, treatment: dict, *, names=("treatment", "control"), alpha: float,
                  power: float, n_boot: int, tie_within: float = 1e-9) -> Comparison:
    """control/treatment: unit id -> its trials (a list, or one value), each a score in [0, 1] or
    None (unmeasured). One binary trial per unit everywhere: `compare`, the exact McNemar test, as
    ever. Otherwise the units are paired by id (never by trial number, whose order a source may
    not keep), each unit's measured trials averaged, and the paired per-unit differences tested:
    the Wilcoxon signed-rank test (the p the verdict reads; zero differences dropped), the exact
    sign test beside it (b units up, c down, the rest tied), the paired bootstrap CI of the mean
    difference, and the MDE from the observed spread of the differences, (z_{α/2} + z_β)·sd/√n.
    A unit none of whose trials was measured in an arm drops (counted). A unit whose every trial
    in both arms scored 0, or every one 1, is uninformative: it is paired (a tie) and named.
    `tie_within`: per-unit differences this small are ties (floating-point noise, or a source's
    rounding: a score given to one decimal of 100 moves by up to 0.0005)."""
    if is_binary_single(control, treatment):
        one = lambda arm: {u: None if (s := trials_of(v)[0]) is None else s == 1.0 for u, v in arm.items()}  # noqa: E731
        c1, t1 = one(control), one(treatment)
        out = compare(c1, t1, names=names, alpha=alpha, power=power, n_boot=n_boot)
        out.test, out.test_reason = "mcnemar", "one binary trial per unit: the exact McNemar test"
        tied = sorted(u for u in set(c1) & set(t1) if c1[u] is not None and c1[u] == t1[u])
        out.ties = out.uninformative = len(tied)  # one binary trial alike in both arms: all 0 or all 1
        out.uninformative_units = tied[:20]
        return out
    ct = {u: trials_of(v) for u, v in control.items()}
    tt = {u: trials_of(v) for u, v in treatment.items()}
    cm = {u: unit_mean(v) for u, v in ct.items()}
    tm = {u: unit_mean(v) for u, v in tt.items()}
    paired = sorted(u for u in set(cm) & set(tm) if cm[u] is not None and tm[u] is not None)
    trials = {"control": sum(len(v) for v in ct.values()), "treatment": sum(len(v) for v in tt.values())}
    unmeasured = {"control": sum(x is None for v in ct.values() for x in v),
                  "treatment": sum(x is None for v in tt.values() for x in v)}
    base = dict(treatment=names[0], control=names[1], n_paired=len(paired),
                n_dropped=len(set(ct) | set(tt)) - len(paired), alpha=alpha, power=power, p_adjusted=None,
                **{**attrition(cm, tm), **(trial_attrition(ct, tt) if any(len(v) > 1 for arm in (ct, tt)
                                                                          for v in arm.values()) else {})},
                test="wilcoxon", n_trials=trials, trials_unmeasured=unmeasured,
                test_reason="scores in [0, 1] or several trials per unit: the Wilcoxon signed-rank test over the "
                            "per-unit mean differences (zeros dropped), the exact sign test beside it")
    if not paired:
        return Comparison(**base, control_rate=None, treatment_rate=None, difference=None, b=0, c=0,
                          p_value=None, ci_low=None, ci_high=None, mde=None, significant=None, ties=0,
                          uninformative=0, uninformative_units=[], note="no unit was measured in both arms")
    import numpy as np

    x = np.array([cm[u] for u in paired])
    y = np.array([tm[u] for u in paired])
    diffs = [0.0 if abs(d) <= tie_within else float(d) for d in y - x]
    b, c = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    extreme = [u for u in paired if {s for s in ct[u] + tt[u] if s is not None} in ({0.0}, {1.0})]
    seed = int.from_bytes(hashlib.sha256("|".join(paired).encode()).digest()[:4], "big")
    low, high = paired_bootstrap_ci(x, y, n_boot, seed)
    p = wilcoxon_p(diffs)
    sd = float(np.std(diffs, ddof=1)) if len(diffs) > 1 else None
    effect = _z(alpha, power) * sd / math.sqrt(len(diffs)) if sd else None
    note = "" if effect else ("one unit: no spread to estimate the MDE from" if sd is None
                              else "every unit moved alike: the MDE cannot be estimated from this run")
    return Comparison(**base, control_rate=float(x.mean()), treatment_rate=float(y.mean()),
                      difference=float(np.mean(diffs)), b=b, c=c, p_value=p, ci_low=low, ci_high=high,
                      mde=effect, significant=p < alpha, note=note, sign_p=mcnemar_exact(b, c),
                      wilcoxon_p=p, ties=len(paired) - b - c, uninformative=len(extreme),
                      uninformative_units=extreme[:20])


@dataclass
class CandidateVerdict:
    """Whether a candidate beats the incumbent on the same validation tasks (skillos optimize)."""

    verdict: str  # accept | reject | indecisive (too little measured to decide: not a rejection)
    mode: str  # paired: mean paired difference > k·SE; strict: candidate rate > incumbent rate
    n_tasks: int
    n_paired: int  # tasks measured under both skills
    n_unmeasured: int
    mean_difference: float | None  # candidate - incumbent, over paired tasks
    se: float | None  # standard error of the mean paired difference
    threshold: float | None  # what the mean had to exceed
    reason: str

    def to_dict(self) -> dict:
        return asdict(self)


GATE_MODES = ("paired", "strict")


def smallest_acceptable_gain(n: int, k: float, *, noise: float | None = None,
                             discordance: float | None = None) -> float:
    """The smallest mean gain (candidate - incumbent, a share of the n validation tasks) the
    paired k·SE gate can accept: it needs mean > k·SE with SE = sqrt((q - mean²) / (n - 1)),
    q the share of tasks where the two skill sets disagree.

    noise: the share of tasks that flip between two copies of one skill (the A/A run), so a
    gain g comes with q = noise + g. discordance: q itself, planned (experiment.expected_discordance).
    Solving mean > k·SE for the mean gives the bound; a gain below it is rejected by construction."""
    if n < 2:
        return float("inf")
    m = n - 1 + k * k
    if discordance is not None:
        return k * math.sqrt(discordance / m)
    q0 = noise or 0.0
    return (k * k + math.sqrt(k ** 4 + 4 * m * k * k * q0)) / (2 * m)


def accept_candidate(incumbent: dict, candidate: dict, mode: str, k: float,
                     max_unmeasured: float) -> CandidateVerdict:
    """incumbent/candidate: task id -> True/False/None on the same validation tasks.

    strict (the config's default, the method's): SkillOpt's rule, accept iff the candidate's rate
    is higher (no variance term). paired: accept iff the mean paired difference exceeds k standard
    errors, so two copies of one skill, or noise of one flipped task in a small split, do not pass. Either way, when more than `max_unmeasured` of the tasks are unmeasured the
    verdict is indecisive: an outage is not evidence against an edit."""
    if mode not in GATE_MODES:
        raise ValueError(f"gate mode {mode!r} is not one of {', '.join(GATE_MODES)}")
    tasks = sorted(set(incumbent) | set(candidate))
    paired = [t for t in tasks if incumbent.get(t) is not None and candidate.get(t) is not None]
    base = dict(mode=mode, n_tasks=len(tasks), n_paired=len(paired), n_unmeasured=len(tasks) - len(paired))
    if not tasks or base["n_unmeasured"] > max_unmeasured * len(tasks):
        return CandidateVerdict("indecisive", **base, mean_difference=None, se=None, threshold=None,
                                reason=f"{base['n_unmeasured']} of {len(tasks)} validation tasks unmeasured "
                                       f"(more than {max_unmeasured:.0%})")
    diffs = [int(bool(candidate[t])) - int(bool(incumbent[t])) for t in paired]
    mean = sum(diffs) / len(diffs)
    se = (math.sqrt(sum((d - mean) ** 2 for d in diffs) / (len(diffs) - 1) / len(diffs))
          if len(diffs) > 1 else None)
    if mode == "strict":
        accept = mean > 0
        return CandidateVerdict("accept" if accept else "reject", **base, mean_difference=mean, se=se,
                                threshold=0.0,
                                reason=f"candidate - incumbent = {mean:+.3f} over {len(paired)} tasks (strict: > 0)")
    if se is None:
        return CandidateVerdict("indecisive", **base, mean_difference=mean, se=None, threshold=None,
                                reason="one paired task: no standard error")
    accept = mean > k * se and mean > 0
    return CandidateVerdict("accept" if accept else "reject", **base, mean_difference=mean, se=se,
                            threshold=k * se, reason=f"mean paired difference {mean:+.3f} vs {k:g}·SE = "
                                                     f"{k * se:.3f} over {len(paired)} tasks")


# -- the one place a claim is decided ------------------------------------------------------------
VERDICT_WORDS = ("improvement", "can't tell yet", "not detected", "regression", "attrition", "not reportable")
# What a verdict reads off a comparison beyond its p and difference (a re-judged row must carry them).
JUDGED_FIELDS = ("p_value", "difference", "b", "c", "n_paired", "mde", "ci_low", "ci_high", "attempted",
                 "control_unmeasured", "treatment_unmeasured", "attrition_p")
CORRECTIONS = ("holm", "bonferroni", "none")


@dataclass
class Verdict:
    """What a comparison lets a report claim, with the reasons and the family it was judged in.

    improvement / regression: the difference survives the family's correction at alpha.
    can't tell yet: it does not, and its confidence interval holds both a worthwhile gain and a
    loss as large (the planned effect, else the MDE at this n): more games are needed.
    not detected: it does not, and the interval rules one of them out; "below the MDE" when the
    difference is smaller than this n could detect — never evidence of no effect.
    attrition: the arms left games unmeasured at rates that differ beyond chance, so the games
    left to compare are not alike in both arms: no claim either way, both rates named.
    not reportable: the comparison cannot carry a claim (nothing measured in both arms, a stale
    control, denominators that differ, ...)."""

    word: str
    reasons: list
    family: str  # the family's name: what the correction counted
    family_size: int
    correction: str
    p_value: float | None
    p_adjusted: float | None
    alpha: float
    below_mde: bool = False

    @property
    def label(self) -> str:
        return "not detected (below the MDE)" if self.below_mde else self.word

    def line(self) -> str:
        return f"{self.label}: {'; '.join(self.reasons)}" if self.reasons else self.label

    def to_dict(self) -> dict:
        return {**asdict(self), "label": self.label, "line": self.line()}


def verdicts(comparisons: dict, *, alpha: float, family: str, correction: str,
             family_size: int | None = None, problems: dict | None = None, worthwhile: float | None = None) -> dict:
    """{key: Comparison} of one family -> {key: Verdict}, every claim decided here.

    The p-values are adjusted over the whole family (`correction`: holm, bonferroni, or none for
    a family of one); `family_size` counts members judged elsewhere (e.g. every candidate an
    optimize run tried), each taken as p = 1, which is conservative. An unmeasured p counts as a
    member with p = 1: leaving it out would shrink the family. `problems` {key: [reason]} makes
    a comparison not reportable whatever its numbers (a stale control, differing denominators).
    `worthwhile`: the planned effect (experiment.expected_effect, a difference of rates) that
    decides "can't tell yet"; None: each comparison's own MDE."""
    if correction not in CORRECTIONS:
        raise ValueError(f"correction {correction!r} is not one of {', '.join(CORRECTIONS)}")
    keys = list(comparisons)
    size = max(len(keys), family_size or 0)
    raw = [comparisons[k].p_value if comparisons[k].p_value is not None else 1.0 for k in keys]
    if correction == "holm":
        adjusted = adjust(raw + [1.0] * (size - len(keys)), "holm")[:len(keys)]
    elif correction == "bonferroni":
        adjusted = [min(1.0, p * size) for p in raw]
    else:
        adjusted = raw
    out = {}
    for key, p_adj in zip(keys, adjusted):
        c = comparisons[key]
        found = list((problems or {}).get(key) or [])
        base = dict(family=family, family_size=size, correction=correction, p_value=c.p_value,
                    alpha=alpha)
        if c.p_value is None or c.difference is None:
            out[key] = Verdict("not reportable", [c.note or "no game was measured in both arms"] + found,
                               p_adjusted=None, **base)
            continue
        numbers = (f"{100 * c.difference:+.1f} pts, b/c {c.b}/{c.c}, paired n={c.n_paired}, "
                   f"p {c.p_value:.3g} -> {p_adj:.3g} {_correction_name(correction)} over a family of "
                   f"{size} ({family})")
        lost = _attrition_text(c, alpha)
        spans = _spans(c, worthwhile)
        if found:
            out[key] = Verdict("not reportable", found + [numbers], p_adjusted=p_adj, **base)
        elif lost:
            out[key] = Verdict("attrition", [lost, "the games left to compare are not alike in both arms: no claim "
                                             "either way", numbers], p_adjusted=p_adj, **base)
        elif p_adj < alpha:
            word = "improvement" if c.difference > 0 else "regression"
            out[key] = Verdict(word, [f"{numbers} < alpha {alpha:g}", _mde_text(c)], p_adjusted=p_adj, **base)
        elif spans:
            out[key] = Verdict("can't tell yet", [spans, f"{numbers} >= alpha {alpha:g}"], p_adjusted=p_adj, **base)
        elif c.mde is not None and abs(c.difference) < c.mde:
            below = (f"|{100 * c.difference:.1f}| pts is below the MDE of {100 * c.mde:.1f} pts at this n"
                     if c.mde <= 1 else f"this n can detect no difference at all (its MDE, {100 * c.mde:.0f} pts, is "
                     "above 100)")
            out[key] = Verdict("not detected", [f"{below}: not evidence of no effect", f"{numbers} >= alpha {alpha:g}"],
                               p_adjusted=p_adj, below_mde=True, **base)
        else:
            out[key] = Verdict("not detected", [
                f"not significant after {_correction_name(correction)} over a family of {size} ({family}) "
                f"(p {c.p_value:.3g} -> {p_adj:.3g} >= {alpha:g})", _mde_text(c)], p_adjusted=p_adj, **base)
    return out


def _attrition_text(c, alpha: float) -> str | None:
    """Why a comparison's arms lost games unevenly, or None (even, or not computed)."""
    p = getattr(c, "attrition_p", None)
    if p is None or p >= alpha:
        return None
    if getattr(c, "attrition_of", None) == "trials":
        said = {arm: f"{c.trials_unmeasured[arm]}/{c.n_trials[arm]}" for arm in ("treatment", "control")}
        return (f"{c.treatment} left {said['treatment']} trials unmeasured, {c.control} {said['control']}; the games "
                f"that lost more trials in one arm lean one way beyond chance (exact sign test, p {p:.3g} < alpha "
                f"{alpha:g})")
    n = getattr(c, "attempted", None) or 0
    rate = lambda k: f"{k}/{n} ({100 * k / n:.0f}%)" if n else str(k)  # noqa: E731
    return (f"{c.treatment} left {rate(c.treatment_unmeasured)} games unmeasured, {c.control} "
            f"{rate(c.control_unmeasured)}; they differ beyond chance (exact sign test on the games unmeasured "
            f"in one arm only, p {p:.3g} < alpha {alpha:g})")


def _spans(c, worthwhile: float | None) -> str | None:
    """Why the interval cannot tell a worthwhile gain from as large a loss, or None."""
    size, what = (worthwhile, "the planned effect") if worthwhile else (getattr(c, "mde", None), "the MDE at this n")
    low, high = getattr(c, "ci_low", None), getattr(c, "ci_high", None)
    if size is None or size > 1 or low is None or high is None or not (low <= -size and high >= size):
        return None
    return (f"the 95% CI [{100 * low:+.1f}, {100 * high:+.1f}] pts holds both a gain and a loss of {100 * size:.1f} "
            f"pts ({what}): more games are needed to tell them apart")


def _correction_name(correction: str) -> str:
    return {"holm": "Holm", "bonferroni": "Bonferroni", "none": "uncorrected"}[correction]


def _mde_text(c: Comparison) -> str:
    if c.mde is None:
        return f"MDE unmeasured ({c.note or 'no discordant pairs'})"
    return f"MDE {100 * c.mde:.1f} pts" if c.mde <= 1 else f"MDE above 100 pts ({100 * c.mde:.0f}): this n detects nothing"


def mean_ci(values: list, alpha: float, bounds: tuple | None = None) -> dict:
    """The mean of per-replicate numbers (one effect per seed) with a Student-t CI across them:
    the replicates are the sample, so two seeds give a wide interval, honestly (cut to `bounds`,
    the values a difference of rates can take). Fewer than two values: the CI is None with the
    reason."""
    import statistics

    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "ci_low": None, "ci_high": None, "sd": None, "confidence": 1 - alpha,
                "note": "no replicate measured"}
    mean = statistics.fmean(values)
    if n < 2:
        return {"n": 1, "mean": mean, "ci_low": None, "ci_high": None, "sd": None, "confidence": 1 - alpha,
                "note": "one replicate: no spread across seeds to put a CI on"}
    from scipy.stats import t

    sd = statistics.stdev(values)
    half = t.ppf(1 - alpha / 2, n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return {"n": n, "mean": mean, "ci_low": low, "ci_high": high, "sd": sd, "confidence": 1 - alpha, "note": ""}
