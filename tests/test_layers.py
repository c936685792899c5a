"""The layering contract (pyproject [tool.importlinter]) holds: lint-imports over the package as
it installs (.ci/lint_layers.py; CI runs the same script). evals and training never import each
other both ways, nothing below the CLI imports it, and no method package under training/ imports
another's."""

import subprocess
import sys

import pytest

from conftest import ROOT

pytest.importorskip("importlinter", reason="the dev extra installs import-linter")


def lint():
    return subprocess.run([sys.executable, str(ROOT / ".ci" / "lint_layers.py")], capture_output=True,
                          text=True, timeout=300)


def test_the_layers_are_kept():
    result = lint()
    assert result.returncode == 0 and "2 kept, 0 broken" in result.stdout, result.stdout[-3000:]


def test_an_upward_import_breaks_the_contract():
    planted = ROOT / "evals" / "_planted_upward.py"
    planted.write_text("from skillos.training.curator import groups  # noqa: F401\n")
    try:
        result = lint()
    finally:
        planted.unlink()
    assert result.returncode != 0 and "skillos.evals is not allowed to import skillos.training" in result.stdout


def test_a_method_importing_another_method_breaks_the_contract():
    """The selector reaches the GRPO plumbing through training/common, never the curator's package."""
    planted = ROOT / "training" / "selector" / "_planted_sideways.py"
    planted.write_text("from skillos.training.curator import reward  # noqa: F401\n")
    try:
        result = lint()
    finally:
        planted.unlink()
    assert result.returncode != 0 and "skillos.training.selector is not allowed to import skillos.training.curator" \
        in result.stdout, result.stdout[-3000:]
