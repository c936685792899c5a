"""Run `lint-imports` (the layering contract in pyproject.toml) on the package as it installs.

The source folders (toolkit/, evals/, training/, ledger/) map onto one package, `skillos`, which
grimp cannot follow in an editable install; so the .py files are copied into a temporary
`skillos/` tree laid out as the wheel has it, and lint-imports reads that copy.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    with tempfile.TemporaryDirectory(prefix="skillos-layers-") as tmp:
        for package, folder in setup["package-dir"].items():
            target = Path(tmp, *package.split("."))
            shutil.copytree(ROOT / folder, target, dirs_exist_ok=True,
                            ignore=lambda d, names: [n for n in names if n == "__pycache__" or
                                                     (Path(d, n).is_file() and not n.endswith(".py"))])
        env = {**os.environ, "PYTHONPATH": tmp}
        lint = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or "lint-imports"
        return subprocess.run([lint, "--no-cache", str(ROOT / "pyproject.toml")], env=env, cwd=tmp).returncode


if __name__ == "__main__":
    sys.exit(main())
