"""Grading a reasoning answer: the last `\\boxed{}` with HF's math-verify, integers for AIME, a
letter for multiple choice.

* math: the last `\\boxed{...}` (braces matched, so `\\boxed{\\frac{1}{2}}` is whole), parsed and
  compared symbolically against the reference by math-verify (fractions, decimals, equivalent
  forms), the library open-r1 and lighteval grade with.
* integer (AIME): the last boxed answer must be one integer 0-999 equal to the reference.
* choice (GPQA): the last explicit "answer is (X)" / "Answer: X" / boxed letter. A bare letter
  anywhere else is never read as an answer: the article "A" is not option A.

An answer that cannot be extracted is wrong (`extracted` None). A failed executor call never
reaches here: the runner records that game as unmeasured.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_SAID = r"(?i:answer\s*(?:is|:|=)\s*:?\s*(?:option\s*)?)"  # "the answer is", "Answer:", ...
_CHOICE = [  # explicit statements of a choice, capital letters only; the last one in the text wins
    re.compile(_SAID + r"[\(\[]([A-D])[\)\]]"),
    # a bare letter only when punctuation or the line's end follows: "the answer is A mixture"
    # names no option
    re.compile(_SAID + r"\**([A-D])(?=\**\s*(?:[.,;:!)]|$))", re.MULTILINE),
    re.compile(r"\\boxed\s*\{\s*(?:\\text(?:bf)?\s*\{\s*)?\(?([A-D])\)?\s*\}?\s*\}"),
]


@dataclass(frozen=True)
class Grade:
    correct: bool
    extracted: str | None  # what was read as the answer; None: nothing could be extracted


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{...} (or \\fbox), braces balanced; None if there is none."""
    found = None
    for match in _BOX.finditer(text or ""):
        depth, start = 1, match.end()
        for i in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                found = text[start:i].strip()
                break
    return found


def extract_choice(text: str) -> str | None:
    """The letter of the last explicit choice statement; None if there is none."""
    best, where = None, -1
    for pattern in _CHOICE:
        for match in pattern.finditer(text or ""):
            if match.start() > where:
                best, where = match.group(1), match.start()
    return best


def _timeout() -> int | None:
    """math-verify times out with SIGALRM, which only the main thread may set; games played in
    worker threads (eval.concurrency) parse without the alarm."""
    return 5 if threading.current_thread() is threading.main_thread() else None


def math_equal(reference: str, answer: str) -> bool:
    from math_verify import parse, verify

    timeout = _timeout()
    gold = parse(f"${reference}$", parsing_timeout=timeout)
    pred = parse(f"\\boxed{{{answer}}}", parsing_timeout=timeout)
    if not gold or not pred:
        return False
    return bool(verify(gold, pred, timeout_seconds=timeout))


def _integer(answer: str) -> int | None:
    cleaned = re.sub(r"\\[,!;: ]|\s|,|\^\{?\\circ\}?|\\text\{[^{}]*\}|\$", "", answer)
    return int(cleaned) if re.fullmatch(r"[+-]?\d+", cleaned) else None


def grade(grading: str, reference: str, response: str) -> Grade:
    """Grade `response` (the executor's whole reply) against `reference` by `grading`."""
    if grading == "choice":
        letter = extract_choice(response)
        return Grade(letter is not None and letter == reference.strip().upper(), letter)
    boxed = last_boxed(response)
    if boxed is None or not boxed:
        return Grade(False, None)
    if grading == "integer":
        value = _integer(boxed)
        if value is None or not 0 <= value <= 999:
            return Grade(False, boxed)
        return Grade(value == _integer(reference), boxed)
    if grading == "math":
        return Grade(math_equal(reference, boxed), boxed)
    raise ValueError(f"unknown grading {grading!r}")
