"""The public API documents itself: every function in `skillos.__all__` says, in its docstring,
what each argument is (Args:), what it returns (Returns:) and what it raises (Raises:)."""

import inspect
import re

import skillos
from skillos import api


def undocumented(fn) -> list[str]:
    """What `fn`'s docstring leaves out: a missing section, or an argument Args: does not name."""
    doc = inspect.getdoc(fn) or ""
    missing = [s for s in ("Args:", "Returns:", "Raises:") if s not in doc]
    args = doc.split("Args:", 1)[1].split("Returns:", 1)[0] if "Args:" in doc else ""
    named = {n for line in args.splitlines() for n in re.findall(r"\w+", line.split(":", 1)[0])}
    return missing + [p for p in inspect.signature(fn).parameters if p not in named and p != "columns"]


def test_every_public_function_documents_its_arguments_returns_and_raises():
    functions = [n for n in skillos.__all__ if inspect.isfunction(getattr(api, n))]
    assert len(functions) == len(skillos.__all__) - 1  # all but GateRefused, a class
    assert {n: undocumented(getattr(api, n)) for n in functions} == {n: [] for n in functions}
    assert "`report`" in inspect.getdoc(skillos.GateRefused)  # what a caller reads off the refusal


def test_the_doc_check_can_fail():
    def half(config, out=None):
        """Something.

        Args:
            config: a config.
        Returns:
            Nothing.
        """

    assert undocumented(half) == ["Raises:", "out"]
