"""Grading a reasoning answer: the final `\\boxed{}` answer with HF's math-verify, integers for
AIME, a letter for multiple choice. No wrong answer is credited.

* The final answer is the last `\\boxed{...}` (braces matched, so `\\boxed{\\frac{1}{2}}` is
  whole), together with the boxed answers just before it that math-verify joins into one answer
  (closer than 10 characters, or closer than 70 with "and", "or", "," or ";" between and a
  different content): `\\boxed{(2, 2)} and \\boxed{(6, 2)}` is the set of both solutions.
* math: that answer parsed and compared symbolically against the reference by math-verify
  (fractions, decimals, equivalent forms, sets), the library open-r1 and lighteval grade with,
  with three refusals of our own: an approximate relation (`2 \\approx 3`), a logical one
  (`1 \\lor 2`) and a false equation between numbers (`3=2`, where math-verify reads the right
  side) are not an answer.
* integer (AIME): one integer 0-999, digits grouped by thousands at most (`1,000`), a unit
  word or degree sign after it; `1,2`, `1 2` and `1\\text{ or }2` are not 12.
* choice (GPQA): the last explicit "answer is (X)" / "Answer: X" / boxed letter. A bare letter
  anywhere else is never read as an answer (the article "A" is not option A), and a statement
  that lists several options ("The answer is A, B, C or D.") is no choice.

Every parse runs in a worker process with a time bound (`GRADE_TIMEOUT_S`), from any thread (a
worker thread cannot use SIGALRM): an answer whose parse exceeds it is wrong, and its Grade says
`timed_out` so the run counts it; never a hung process. An answer that cannot be extracted is
wrong (`extracted` None). A failed executor call never reaches here: the runner records that
game as unmeasured.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from fractions import Fraction
from skillos.safety import BoundedWorkers, CallFailed, CallTimeout, WorkerFailed

GRADE_TIMEOUT_S = 5.0  # math-verify's own default per parse and per comparison
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_SAID = r"(?i:answer\s*(?:is|:|=)\s*:?\s*(?:option\s*)?)"  # "the answer is", "Answer:", ...
_CHOICE = [  # explicit statements of a choice, capital letters only; the last one in the text wins
    re.compile(_SAID + r"\**[\(\[]([A-D])[\)\]]"),
    # a bare letter only when punctuation or the line's end follows: "the answer is A mixture"
    # names no option
    re.compile(_SAID + r"\**([A-D])(?=\**\s*(?:[.,;:!)]|$))", re.MULTILINE),
]
# what follows a letter when the statement lists options: "A, B", "A or B", "(A)/(B)", "A and C"
_LISTED = re.compile(r"\**\s*[\)\]]?\s*\**\s*(?:,|;|/|&|(?i:\bor\b|\band\b))\s*(?i:(?:or|and)\b)?\s*\**\s*"
                     r"(?i:option\s*)?[\(\[]?([A-D])(?![A-Za-z])")
_BOX_LETTER = re.compile(r"^\s*(?:\\text(?:bf|rm)?\s*\{\s*)?\(?\s*([A-D])\s*\)?\s*\}?\s*$")
# logic between statements is not an answer (a relation between numbers is checked: _false_relation)
_NOT_AN_ANSWER = re.compile(r"\\(?:lor|vee|land|wedge|lnot|neg|propto)(?![A-Za-z])|∨|∧")
# digit groups of an integer answer: 1,000  1{,}000  1\,000  1\!000  1 000
_THOUSANDS = r"(?:,|\{,\}|\\[,;:! ]|,\\!|\s)"
_INTEGER = re.compile(rf"\+?(\d{{1,3}}(?:{_THOUSANDS}\d{{3}})+|\d+)")
_UNIT = re.compile(r"(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|°|\\(?:text|mathrm|textrm|mbox)\s*\{\s*[A-Za-z][A-Za-z .]*\})\s*$")
_WRAP = re.compile(r"^\\(?:text|textbf|mathrm|mathbf|textrm|mbox)\s*\{(.*)\}$", re.DOTALL)
_PLAIN_INT = re.compile(r"[+-]?\d+")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)")


@dataclass(frozen=True)
class Grade:
    correct: bool
    extracted: str | None  # what was read as the answer; None: nothing could be extracted
    timed_out: bool = False  # the parse passed the time bound (or broke its worker): wrong, counted


def _boxes(text: str) -> list[tuple[int, int, str]]:
    """Every \\boxed{...} / \\fbox{...}: (start, end of its closing brace, content), braces balanced."""
    found, text = [], text or ""
    for match in _BOX.finditer(text):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                found.append((match.start(), i, text[start:i].strip()))
                break
    # a box inside another box is part of the outer one's content
    return [b for b in found if not any(o[0] < b[0] and b[1] < o[1] for o in found)]


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{...} (or \\fbox), braces balanced; None if there is none."""
    boxes = _boxes(text)
    return boxes[-1][2] if boxes else None


_SEPARATOR = re.compile(r"\b(and|or)\b|,|;")


def final_answer(text: str) -> list[str]:
    """The boxed answers that form the final answer, in order: the last box, and the boxes before
    it that math-verify joins with it (latex2sympy2_extended's extract_boxed_content rule: less
    than 10 characters apart, or less than 70 with a separator and a different content)."""
    boxes = _boxes(text)
    if not boxes:
        return []
    group = [boxes[-1]]
    for box in reversed(boxes[:-1]):
        between = text[box[1] + 1:group[0][0]]
        if len(between) < 10 or (box[2] != group[0][2] and len(between) < 70 and _SEPARATOR.search(between)):
            if box[2] != group[0][2]:
                group.insert(0, box)
            continue
        break
    return [b[2] for b in group]


def extract_choice(text: str) -> str | None:
    """The letter of the last explicit choice statement; None if there is none, or if the last
    statement lists several options."""
    text = text or ""
    statements = []  # (position, letter or None for a list)
    for pattern in _CHOICE:
        for match in pattern.finditer(text):
            listed = _LISTED.match(text, match.end(1))
            statements.append((match.start(), None if listed else match.group(1)))
    for start, _, content in _boxes(text):
        letter = _BOX_LETTER.match(content)
        if letter:
            statements.append((start, letter.group(1)))
        elif len(set(re.findall(r"(?<![A-Za-z\\])[A-D](?![A-Za-z])", content))) > 1:
            statements.append((start, None))  # \boxed{A, C}: several options
    return max(statements, key=lambda s: s[0])[1] if statements else None


def _integer(answer: str) -> int | None:
    """An integer answer written as one: digits (grouped by thousands at most), a sign, a unit
    word or a degree sign after it; None for anything else (`1,2`, `1 2`, `1\\text{ or }2`)."""
    cleaned = answer.strip().strip("$").strip()
    wrapped = _WRAP.match(cleaned)
    if wrapped:
        cleaned = wrapped.group(1).strip()
    cleaned = _UNIT.sub("", cleaned).strip()
    match = _INTEGER.fullmatch(cleaned)
    return int(re.sub(r"\D", "", match.group(1))) if match else None


def _exact(text: str) -> Fraction | None:
    text = text.strip().strip("$").strip()
    return Fraction(text) if _PLAIN_NUMBER.fullmatch(text) else None


def compare_in_worker(reference: str, answers: list) -> bool:
    """math-verify's verdict on the answer (the boxes joined as math-verify joins them), and
    False when a box states a relation between numbers that does not hold. Runs in a grading
    worker (`math_equal`)."""
    from math_verify import parse, verify

    try:
        if any(_false_relation(a) for a in answers):
            return False
    except Exception:  # noqa: BLE001 - a side the parser cannot read: math-verify decides
        pass
    gold = parse(f"${reference}$", parsing_timeout=None)
    pred = parse("\\boxed{" + ",".join(answers) + "}", parsing_timeout=None)
    if not gold or not pred:
        return False
    return bool(verify(gold, pred, timeout_seconds=None))


_RELATION = re.compile(r"(?<![<>!\\])=|\\(?:approx|thickapprox|simeq|sim|doteq)(?![A-Za-z])|≈")


def _split_top(text: str, pattern: re.Pattern) -> list[str]:
    """`text` cut at the matches of `pattern` outside braces and brackets; the separators kept."""
    parts, depth, last = [], 0, 0
    opened = {m.start() for m in re.finditer(r"[{(\[]", text)}
    closed = {m.start() for m in re.finditer(r"[})\]]", text)}
    cuts = []
    for i in range(len(text)):
        if i in opened:
            depth += 1
        elif i in closed:
            depth -= 1
        elif depth == 0:
            match = pattern.match(text, i)
            if match and (not cuts or i >= cuts[-1][1]):
                cuts.append((i, match.end()))
    for start, end in cuts:
        parts += [text[last:start], text[start:end]]
        last = end
    return parts + [text[last:]]


def _number(latex: str):
    """The value of a side without variables, as a complex; None if it has variables or none."""
    from math_verify import parse
    from sympy import N

    parsed = parse(f"${latex}$", parsing_timeout=None)
    expr = parsed[0] if parsed else None
    if expr is None or isinstance(expr, str) or not hasattr(expr, "free_symbols") or expr.free_symbols:
        return None
    try:
        return complex(N(expr, 30))
    except Exception:  # noqa: BLE001 - a set, a tuple, a matrix: not one number
        return None


def _false_relation(answer: str) -> bool:
    """A chain `a = b \\approx c` in one box where two neighbouring sides are numbers that the
    relation between them does not hold for: `3=2`, `x = 5+5+1 = 7 = 11`, `2 \\approx 3`
    (equal: to 1e-9; approximately: to 1%, or half a unit of the last digit written)."""
    for item in _split_top(answer, re.compile(r",|;")):
        parts = _split_top(item, _RELATION)
        if len(parts) < 3:
            continue
        sides = parts[0::2]
        values = [_number(side) if side.strip() else None for side in sides]
        for k, relation in enumerate(parts[1::2]):
            a, b = values[k], values[k + 1]
            if a is None or b is None:
                continue
            gap, size = abs(a - b), max(abs(a), abs(b), 1.0)
            if relation == "=":
                if gap > 1e-9 * size:
                    return True
            else:
                digits = max((len(d) for d in re.findall(r"\.(\d+)", sides[k] + " " + sides[k + 1])), default=0)
                if gap > max(0.01 * max(abs(a), abs(b)), 0.5 * 10 ** -digits):
                    return True
    return False


_POOL = None
_POOL_LOCK = threading.Lock()


def _pool():
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = BoundedWorkers("skillos.evals.envs.reasoning.grading:compare_in_worker")
        return _POOL


def math_equal(reference: str, answers: list[str] | str, timeout_s: float = GRADE_TIMEOUT_S) -> bool | None:
    """True / False; None when the comparison passed `timeout_s` (or broke its worker)."""
    if isinstance(answers, str):
        answers = [answers]
    if len(answers) == 1:  # plain numbers need no parser: equal values are equal
        gold, pred = _exact(reference), _exact(answers[0])
        if gold is not None and pred is not None:
            if gold == pred:
                return True
            if _PLAIN_INT.fullmatch(reference.strip()) and _PLAIN_INT.fullmatch(answers[0].strip().strip("$")):
                return False

    try:
        return bool(_pool().call(reference, list(answers), timeout_s=timeout_s))
    except CallFailed:  # the parser raised: an answer it cannot read is wrong, as in math-verify
        return False
    except (CallTimeout, WorkerFailed):
        return None


def grade(grading: str, reference: str, response: str, timeout_s: float = GRADE_TIMEOUT_S) -> Grade:
    """Grade `response` (the executor's whole reply) against `reference` by `grading`."""
    if grading == "choice":
        letter = extract_choice(response)
        return Grade(letter is not None and letter == reference.strip().upper(), letter)
    if grading not in ("integer", "math"):
        raise ValueError(f"unknown grading {grading!r}")
    answers = final_answer(response)
    if not answers or not all(answers):
        return Grade(False, None)
    shown = ", ".join(answers)
    if grading == "integer":
        value = _integer(answers[0]) if len(answers) == 1 else None
        if value is None or not 0 <= value <= 999:
            return Grade(False, shown)
        return Grade(value == _integer(reference), shown)
    if any(_NOT_AN_ANSWER.search(a) for a in answers) and not _NOT_AN_ANSWER.search(reference):
        return Grade(False, shown)
    equal = math_equal(reference, answers, timeout_s)
    return Grade(bool(equal), shown, timed_out=equal is None)
