"""One candidate loop: `skillos optimize` and a sleep night both call `training/textopt/candidates.py`'s
`run_candidates` and neither writes its own propose → gate → accept loop again."""

import ast
import inspect
import json
from pathlib import Path

from skillos.evals.stats import CandidateVerdict
from skillos.training.textopt import candidates
from skillos.training.textopt import optimize
from skillos.training.textopt.sleep import night

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "training" / "textopt" / "candidates.py"


def _calls(tree: ast.AST) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None)
    return names


def test_optimize_and_night_call_the_shared_loop():
    for module in (optimize, night):
        tree = ast.parse(inspect.getsource(module))
        assert "run_candidates" in _calls(tree), f"{module.__name__} does not call the shared candidate loop"


def test_neither_writes_its_own_propose_gate_loop():
    """A loop that both proposes and gates, or a `memory.add` of a rejection, in optimize.py or
    night.py would be a second copy of the shared loop."""
    for path in (ROOT / "training" / "textopt" / "optimize.py", ROOT / "training" / "textopt" / "sleep" / "night.py"):
        tree = ast.parse(path.read_text())
        for loop in (n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))):
            assert not {"propose", "gate"} <= _calls(loop), f"{path.name}:{loop.lineno} is its own candidate loop"
        assert "memory.add(" not in path.read_text(), f"{path.name} remembers rejections itself"
        assert "calibrate" not in _calls(tree), f"{path.name} calibrates itself, not through candidates.calibrated"


def test_the_loop_is_defined_once():
    hits = [p for p in (ROOT / "training").rglob("*.py") if "def run_candidates(" in p.read_text()]
    assert hits == [SHARED]
    assert 'verdict.verdict == "accept"' in SHARED.read_text()


class _Memory:
    def __init__(self):
        self.added = []

    def add(self, *args):
        self.added.append(args)


def _verdict(word: str) -> CandidateVerdict:
    return CandidateVerdict(verdict=word, reason="", mode="paired", n_tasks=1, n_paired=1, n_unmeasured=0,
                       mean_difference=None, se=None, threshold=None)


class _Search:
    """Step 0 proposes nothing, step 1 is rejected, step 2 accepted."""

    def __init__(self):
        self.seen, self.verdicts = [], {1: "reject", 2: "accept"}

    def propose(self, step, now):
        return None if step == 0 else candidates.Candidate(f"skill-{step}", [f"edit {step}"], [f"k{step}"], 7, step)

    def evaluate(self, candidate):
        return {"a": candidate.skill == "skill-2"}

    def judge(self, step, incumbent, candidate):
        return _verdict(self.verdicts[step])

    def describe(self, candidate, verdict, now, candidate_val, paired):
        row = {"tried": now.tried, "step": candidate.step, "verdict": verdict.verdict,
               "rates": [paired.control_rate, paired.treatment_rate]}
        return candidates.Described(row, "+edit", "[]", f"step {candidate.step}: {verdict.verdict}")

    def after_step(self, step, now):
        self.seen.append((step, now.skill))


def test_the_loop_accepts_remembers_counts_and_skips_and_keeps_the_books(tmp_path):
    """Tried counts the two candidates; the rejected one is remembered against the incumbent it
    lost to; after_step sees every step; the loop writes each candidate's history row with the
    real paired rates and echoes its line (the ledger row is checked by the optimize and night
    tests, which read it back)."""
    memory, search, said = _Memory(), _Search(), []
    standing = candidates.Standing("seed", {"a": True})
    books = candidates.Books(tmp_path / "history.jsonl", None, None, said.append,
                             {"alpha": 0.05, "power": 0.8, "n_boot": 50})
    result = candidates.run_candidates(range(3), standing, memory, search, books)
    assert result is standing
    assert (standing.skill, standing.validation, standing.tried, standing.accepted) == ("skill-2", {"a": True}, 2, 1)
    rows = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert rows == standing.history == [{"tried": 1, "step": 1, "verdict": "reject", "rates": [1.0, 0.0]},
                                        {"tried": 2, "step": 2, "verdict": "accept", "rates": [1.0, 1.0]}]
    assert said == ["step 1: reject", "step 2: accept"]
    assert [(a[0], a[2], a[3], a[4], a[5], a[6]) for a in memory.added] == [
        ("edit 1", {"a": True}, {"a": False}, 7, 1, ["k1"])]
    assert search.seen == [(0, "seed"), (1, "seed"), (2, "skill-2")]


def _length(module, qualname: str) -> int:
    tree = ast.parse(inspect.getsource(module))
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == qualname)
    return node.end_lineno - node.lineno + 1


def test_the_two_runs_are_short_and_night_borrows_nothing_from_optimize():
    """The loop owns the bookkeeping, so the runs that call it stay small; night.py imports
    nothing from optimize.py (what both use lives in candidates.py)."""
    assert _length(optimize, "_run") < 80
    assert _length(night, "run_night") < 80
    tree = ast.parse(inspect.getsource(night))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "skillos.training.textopt.optimize" not in imported
