"""Reference hyperparameter tables, shipped as data (references/*.yaml).

A config names one as `reference: <file>/<table>`, e.g. `skillos-paper/alfworld`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import yaml

from skillos.errors import ConfigError


@dataclass(frozen=True)
class Reference:
    name: str
    source: str
    values: dict  # config key (or derived quantity) -> expected value; None: not applicable


def names() -> list[str]:
    found = []
    for entry in sorted(resources.files("skillos.gates").joinpath("references").iterdir(),
                        key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            data = yaml.safe_load(entry.read_text(encoding="utf-8"))
            found += [f"{entry.name[:-5]}/{table}" for table in data.get("tables", {})]
    return found


def load(name: str) -> Reference:
    book, _, table = name.partition("/")
    entry = resources.files("skillos.gates").joinpath("references", f"{book}.yaml")
    known = names()
    if not table or not entry.is_file():
        raise ConfigError(f"reference {name!r} is not shipped; known: {', '.join(known)}")
    data = yaml.safe_load(entry.read_text(encoding="utf-8"))
    if table not in data.get("tables", {}):
        raise ConfigError(f"reference {name!r} is not shipped; known: {', '.join(known)}")
    return Reference(name, data.get("source", book), dict(data["tables"][table]))
