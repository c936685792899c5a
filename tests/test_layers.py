"""The layering contract (pyproject [tool.importlinter]) holds: lint-imports over the package as
it installs (.ci/lint_layers.py; CI runs the same script). evals and training never import each
other both ways, and nothing below the CLI imports it."""

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
    assert result.returncode == 0 and "1 kept, 0 broken" in result.stdout, result.stdout[-3000:]


def test_an_upward_import_breaks_the_contract():
    planted = ROOT / "evals" / "_planted_upward.py"
    planted.write_text("from skillos.training import groups  # noqa: F401\n")
    try:
        result = lint()
    finally:
        planted.unlink()
    assert result.returncode != 0 and "skillos.evals is not allowed to import skillos.training" in result.stdout
