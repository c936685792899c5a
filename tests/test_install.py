"""`pip install .` and `pip install -e .` both give one package `skillos` with its subpackages."""

import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from conftest import ROOT

IMPORT_ALL = """
import importlib, json, pkgutil, sys
import skillos
names = sorted(m.name for m in pkgutil.walk_packages(skillos.__path__, 'skillos.')
               if not m.name.endswith('__main__'))
for name in names:
    importlib.import_module(name)
from importlib import resources
config = resources.files('skillos.evals') / 'configs' / 'quickstart.yaml'
print(json.dumps({'file': skillos.__file__, 'modules': names, 'config': config.is_file(),
                  'heavy': sorted(m for m in ('torch', 'trl', 'vllm') if m in sys.modules)}))
"""


def source_copy(dest: Path) -> Path:
    """The checkout's files (tracked, and new ones git does not ignore) copied to `dest`: setuptools
    builds in the source's build/ folder, and one left from before a module moved would be
    installed with it, old paths and all."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, timeout=60)
    if listed.returncode:
        return ROOT  # not a git checkout: build from the tree as it is
    for name in filter(None, listed.stdout.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def test_regular_install_imports_every_subpackage(tmp_path):
    target = tmp_path / "site"
    source = source_copy(tmp_path / "src")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(target), str(source)], check=True, capture_output=True, timeout=600)
    result = subprocess.run([sys.executable, "-c", IMPORT_ALL], capture_output=True, text=True,
                            cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    info = json.loads(result.stdout)
    assert Path(info["file"]).is_relative_to(target)  # the copy, not the source tree
    for sub in ("skillos.evals", "skillos.training", "skillos.ledger", "skillos.repo",
                "skillos.evals.envs.alfworld.games", "skillos.evals.envs.household.heuristic.curator"):
        assert sub in info["modules"]
    assert info["config"] and info["heavy"] == []
    # every source package is installed (a package missing from pyproject breaks `pip install .`)
    roots = {"toolkit": "skillos", "evals": "skillos.evals", "training": "skillos.training",
             "ledger": "skillos.ledger"}
    source = set()
    for folder, package in roots.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            source.add(".".join((package, *rel)))
    assert source - {"skillos"} <= set(info["modules"])
    assert not (target / "evals").exists() and not (target / "ledger").exists()  # no top-level names


def test_this_environment_imports_the_mapped_folders():
    import skillos
    import skillos.evals
    import skillos.ledger
    import skillos.training

    dist = metadata.distribution("skillos")
    direct = dist.read_text("direct_url.json")
    if direct and json.loads(direct).get("dir_info", {}).get("editable"):
        assert Path(skillos.__file__).parent == ROOT / "toolkit"
        assert Path(skillos.evals.__file__).parent == ROOT / "evals"
        assert Path(skillos.training.__file__).parent == ROOT / "training"
        assert Path(skillos.ledger.__file__).parent == ROOT / "ledger"
    else:
        assert Path(skillos.evals.__file__).parent.name == "evals"
    assert dist.entry_points.select(group="console_scripts", name="skillos")
