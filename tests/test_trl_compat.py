"""TRL's private API behind one module (training/common/trl_compat.py): the installed TRL is the one it
was written for, the pin in pyproject matches, another version or a moved method is a one-line
error, and no other module reaches into TRL's internals on its own."""

import re

import pytest

from conftest import ROOT

from skillos.errors import SkillosError
from skillos.training.common import trl_compat


def test_the_installed_trl_is_the_one_the_private_api_was_read_from():
    trl_compat.check_version()
    trl_compat.check()
    trl_compat.check_per_token()
    pyproject = (ROOT / "pyproject.toml").read_text()
    pins = re.findall(r'"(trl[^"]*)"', pyproject)
    assert pins and set(pins) == {trl_compat.PIN}, pins


def test_another_trl_or_a_moved_method_is_a_one_line_error():
    with pytest.raises(SkillosError, match=r"trl 1\.18\.0 is installed; .* pip install 'trl>=1\.16,<1\.17'"):
        trl_compat.check_version("1.18.0")
    trl_compat.check_version("1.16.3")  # a patch release of the same minor is the same API

    class Moved:
        def _tool_call_loop(self, prompts, prompt_ids):
            pass

        def _compute_loss(self, model, inputs):
            return inputs["advantages"]

    with pytest.raises(SkillosError, match=r"GRPOTrainer\._tool_call_loop\(self, prompts, prompt_ids\) is not"):
        trl_compat.check(Moved, ["_tool_call_loop"])
    with pytest.raises(SkillosError, match="_generate_single_turn is missing"):
        trl_compat.check(Moved, ["_generate_single_turn"])
    with pytest.raises(SkillosError, match="per-token"):
        trl_compat.check_per_token(Moved)


def test_another_trl_refuses_a_trainer_not_the_library_or_an_eval_gate_check(monkeypatch):
    """The version is checked where a trainer class is built, never at import: with another TRL the
    API imports, an eval config's gate check runs, and building the rollout trainer is refused."""
    import subprocess
    import sys

    probe = (
        "import importlib.metadata as m; real = m.version\n"
        "m.version = lambda name: '1.17.0' if name == 'trl' else real(name)\n"
        "import skillos.api\n"
        "from skillos.gates import core\n"
        "[core.checks(p) for p in core.PHASES]  # every method's checks module imported too\n"
        "report = skillos.api.check(sys.argv[1], partial=True)\n"
        "print('checked', len(report.results))\n"
        "from skillos.training.common import trl_compat\n"
        "try:\n    trl_compat.check()\nexcept Exception as exc:\n    print('refused:', exc)\n")
    out = subprocess.run([sys.executable, "-c", "import sys\n" + probe, str(ROOT / "evals" / "configs" / "quickstart.yaml")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "checked " in out.stdout and "refused: trl 1.17.0 is installed" in out.stdout, out.stdout


def test_no_other_module_reaches_into_trl_internals():
    """Only trl_compat imports from TRL's private modules, and every private GRPOTrainer name a
    training module calls or wraps is one trl_compat lists (and checks)."""
    from trl import GRPOTrainer

    listed = set(trl_compat.METHODS) | set(trl_compat.ATTRIBUTES)
    for path in sorted((ROOT / "training").rglob("*.py")) + sorted((ROOT / "toolkit").rglob("*.py")):
        if path.name == "trl_compat.py":
            continue
        text = path.read_text()
        assert not re.search(r"from trl\.(trainer|experimental)\b|import trl\.(trainer|experimental)", text), path
        used = set(re.findall(r"(?:super\(\)|trainer|self|base)\.(_[a-z]\w*)", text))
        private = {name for name in used if hasattr(GRPOTrainer, name) and not name.startswith("__")}
        assert private <= listed, (path.name, sorted(private - listed))
