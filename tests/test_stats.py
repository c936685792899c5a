import math

import pytest
from scipy.stats import norm

from skillos.evals import stats


def test_mcnemar_exact_against_hand_computed_binomial():
    # b=10, c=2: two-sided exact p = 2 * P(X <= 2), X ~ Binomial(12, 1/2) = 2 * (1+12+66)/4096
    assert stats.mcnemar_exact(10, 2) == pytest.approx(2 * 79 / 4096)
    # b=5, c=0: 2 * (1/2)^5
    assert stats.mcnemar_exact(5, 0) == pytest.approx(2 / 32)
    assert stats.mcnemar_exact(3, 3) == pytest.approx(1.0)
    assert stats.mcnemar_exact(0, 0) == 1.0


def test_mde_formula():
    # (z_{alpha/2} + z_beta) * sqrt(d / n)
    z = norm.ppf(0.975) + norm.ppf(0.8)
    assert z == pytest.approx(2.8016, abs=1e-4)
    assert stats.mde(60, 0.2, 0.05, 0.8) == pytest.approx(z * math.sqrt(0.2 / 60))
    assert stats.mde(60, 0.2, 0.05, 0.8) == pytest.approx(0.16175, abs=1e-4)
    assert stats.mde(240, 0.2, 0.05, 0.8) == pytest.approx(stats.mde(60, 0.2, 0.05, 0.8) / 2)


def test_bootstrap_ci_brackets_the_difference():
    control = [0] * 30 + [1] * 30
    treatment = [1] * 45 + [0] * 15
    low, high = stats.paired_bootstrap_ci(control, treatment, n_boot=4000, seed=1)
    assert low < 0.25 < high
    assert stats.paired_bootstrap_ci([1, 0, 1], [1, 0, 1], n_boot=200, seed=0) == (0.0, 0.0)


def test_compare_drops_unmeasured_pairs_and_never_scores_them():
    control = {"a": False, "b": False, "c": True, "d": None, "e": False}
    treatment = {"a": True, "b": True, "c": True, "d": True, "e": None}
    comp = stats.compare(control, treatment, alpha=0.05, power=0.8, n_boot=500)
    assert (comp.n_paired, comp.n_dropped, comp.b, comp.c) == (3, 2, 2, 0)
    assert comp.control_rate == pytest.approx(1 / 3) and comp.treatment_rate == 1.0
    assert comp.p_value == pytest.approx(0.5)


def test_compare_without_discordant_pairs_reports_mde_unmeasured():
    comp = stats.compare({"a": True, "b": False}, {"a": True, "b": False}, alpha=0.05, power=0.8, n_boot=200)
    assert comp.mde is None and "discordant" in comp.note
    empty = stats.compare({"a": None}, {"a": True}, alpha=0.05, power=0.8, n_boot=200)
    assert empty.p_value is None and empty.significant is None and empty.n_dropped == 1


def test_holm_adjustment():
    assert stats.adjust([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.adjust([]) == []


def test_rate_ci_is_the_wilson_interval_and_none_when_nothing_was_measured():
    from statsmodels.stats.proportion import proportion_confint

    for k, n in ((0, 6), (3, 6), (6, 6), (17, 40), (1, 1)):
        assert stats.rate_ci(k, n) == pytest.approx(proportion_confint(k, n, alpha=0.05, method="wilson"), abs=1e-12)
    # by hand: 3/6 -> centre 0.5, half = z*sqrt(0.25/6 + z^2/144)/(1 + z^2/6)
    z = norm.ppf(0.975)
    half = z * math.sqrt(0.25 / 6 + z * z / 144) / (1 + z * z / 6)
    assert stats.rate_ci(3, 6) == pytest.approx((0.5 - half, 0.5 + half))
    for k, n in ((0, 0), (None, 5), (3, None), (7, 6), (True, 6), (-1, 6)):
        assert stats.rate_ci(k, n) == (None, None)


def test_binomial_tail_against_hand_computed_sums():
    """P(X >= k), X ~ Binomial(n, p): the listing audit's test of a rule's oracle share."""
    # 5 of 10 at p 0.2: 1 - P(X <= 4) = 1 - (0.10737 + 0.26844 + 0.30199 + 0.20133 + 0.08808)
    assert stats.binomial_tail(5, 10, 0.2) == pytest.approx(0.032793, abs=1e-6)
    assert stats.binomial_tail(0, 10, 0.2) == pytest.approx(1.0)
    assert stats.binomial_tail(10, 10, 0.5) == pytest.approx(0.5 ** 10)
    assert stats.binomial_tail(11, 10, 0.5) == 0.0


def test_binomial_tail_holds_at_thousands_of_trials():
    """The selector's training pool is audited over 3,553 slates: no float overflow there."""
    p = stats.binomial_tail(800, 3553, 0.2)
    assert 0.0 < p < 1.0 and stats.binomial_tail(711, 3553, 0.2) == pytest.approx(0.5, abs=0.02)
