"""Offline reasoning problems with exact answers, for CPU runs and tests.

Each family writes rows in a hub dataset's own layout (AIME's for integer answers, DeepMath's
for LaTeX answers, GPQA's for multiple choice), and the rows go through the same converters
as the hub files. Problem k of a stream depends only on (seed, k); a problem's split is fixed
by its content hash (60% train, 20% valid_seen, 20% valid_unseen), so the splits never share a
problem and the first m problems of a split are the problems of a pool of m.
"""

from __future__ import annotations

import math
from fractions import Fraction

from skillos.errors import SkillosError
from skillos.evals.envs.reasoning.datasets import (Problem, from_choice_row, from_integer_row,
                                                   from_math_row, rng)

BUCKETS = {"train": range(0, 6), "valid_seen": range(6, 8), "valid_unseen": range(8, 10)}
MAX_DRAWS = 200  # candidates per kept problem before a family is declared exhausted


def latex_fraction(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def remainder_of_power(r):
    a, b, m = r.randint(2, 30), r.randint(5, 60), r.randint(7, 97)
    return "integer", f"Find the remainder when ${a}^{{{b}}}$ is divided by {m}.", str(pow(a, b, m))


def linear_equation(r):
    a, b, c = r.randint(2, 12), r.randint(1, 40), r.randint(1, 60)
    return ("math", f"Solve for $x$: ${a}x + {b} = {c}$. Give $x$ as a reduced fraction.",
            latex_fraction(Fraction(c - b, a)))


def arithmetic_series(r):
    n, a, d = r.randint(5, 15), r.randint(1, 15), r.randint(1, 6)
    return ("integer", f"What is the sum of the first {n} terms of the arithmetic sequence "
            f"{a}, {a + d}, {a + 2 * d}, ...?", str(n * (2 * a + (n - 1) * d) // 2))


def committee_count(r):
    k = r.randint(2, 5)
    n = r.randint(k + 2, 16)
    return ("math", f"In how many ways can a committee of {k} people be chosen from a group of {n} people?",
            str(math.comb(n, k)))


def greatest_common_divisor(r):
    g = r.randint(2, 30)
    x, y = r.randint(2, 30), r.randint(2, 30)
    while math.gcd(x, y) != 1 or x == y:
        x, y = r.randint(2, 30), r.randint(2, 30)
    return "integer", f"What is the greatest common divisor of {g * x} and {g * y}?", str(g)


def divisor_count(r):
    n = r.randint(12, 500)
    return "integer", f"How many positive divisors does {n} have?", str(sum(n % d == 0 for d in range(1, n + 1)))


def digit_sum_of_power(r):
    """No method in the heuristic solver's repertoire computes this: a family skills cannot fix."""
    n = r.randint(10, 60)
    return "integer", f"Compute the sum of the digits of $2^{{{n}}}$.", str(sum(map(int, str(2 ** n))))


def _is_prime(n: int) -> bool:
    return n > 1 and all(n % d for d in range(2, math.isqrt(n) + 1))


def prime_choice(r):
    primes = [p for p in range(50, 400) if _is_prime(p)]
    p = r.choice(primes)
    odd_composites = [c for c in range(p - 40, p + 40, 2) if c > 9 and c % 2 and not _is_prime(c)]
    wrong = r.sample(odd_composites, 3)
    return "choice", "Which of the following numbers is prime?", (str(p), *map(str, wrong))


FAMILIES = {f.__name__.replace("_", "-"): f for f in (
    remainder_of_power, linear_equation, arithmetic_series, committee_count,
    greatest_common_divisor, divisor_count, prime_choice, digit_sum_of_power)}


def _row_to_problem(family: str, kind: str, text: str, answer, index: int, choice_seed: int) -> Problem:
    if kind == "choice":
        correct, *wrong = answer
        row = {"Question": text, "Correct Answer": correct, "Record ID": f"{family}-{'-'.join(answer)}",
               "Subdomain": family, **{f"Incorrect Answer {i}": w for i, w in enumerate(wrong, 1)}}
        problem = from_choice_row(row, "generated", {}, index, choice_seed)
    elif kind == "integer":  # the AIME layout
        row = {"ID": f"{family}-{index}", "Problem": text, "Answer": answer, "topic": family}
        problem = from_integer_row(row, "generated", {"problem": "Problem", "answer": "Answer", "type": "topic"}, index)
    else:  # the DeepMath layout
        row = {"question": text, "final_answer": answer, "topic": family}
        problem = from_math_row(row, "generated", {"problem": "question", "answer": "final_answer", "type": "topic"}, index)
    return Problem(f"gen-{family}-{problem.content_hash[:10]}", problem.task, problem.answer, problem.grading,
                   family, "generated", problem.content_hash, problem.options, problem.choice_seed)


def generate(split: str, n: int, seed: int, families, choice_seed: int) -> list[Problem]:
    """`n` problems of `split`, families in turn, each problem kept only if its hash falls in
    the split's share."""
    if split not in BUCKETS:
        raise SkillosError(f"unknown split {split!r}: choose one of {', '.join(BUCKETS)}")
    names = list(families or FAMILIES)
    kept, seen, draws = [], set(), [0] * len(names)
    position = 0
    while len(kept) < n:
        slot = position % len(names)
        name = names[slot]
        while True:
            draws[slot] += 1
            if draws[slot] > MAX_DRAWS * (len(kept) // len(names) + 1):
                raise SkillosError(f"generated family {name}: cannot draw {n} distinct {split} problems")
            kind, text, answer = FAMILIES[name](rng("skillos-reasoning", seed, name, draws[slot]))
            problem = _row_to_problem(name, kind, text, answer, draws[slot], choice_seed)
            bucket = int(problem.content_hash[:8], 16) % 10
            if bucket in BUCKETS[split] and problem.content_hash not in seen:
                break
        seen.add(problem.content_hash)
        kept.append(problem)
        position += 1
    return kept
