"""Reference hyperparameter tables, shipped as data (references/*.yaml).

A config names one as `reference: <file>/<table>`, e.g. `skillos-paper/alfworld`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

import yaml

from skillos.errors import ConfigError


RESERVED = ("batch", "sources")  # table entries that are not rows


@dataclass(frozen=True)
class Reference:
    name: str
    source: str
    values: dict  # config key (or derived quantity) -> expected value; None: not applicable
    batch: dict | None = None  # {size, means: prompts | completions, source}: what "batch" is
    sources: dict = field(default_factory=dict)  # key -> its source, where not the table's own

    def source_of(self, key: str) -> str:
        return self.sources.get(key, self.source)


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
    rows = dict(data["tables"][table])
    batch, sources = rows.pop("batch", None), rows.pop("sources", None) or {}
    if batch is not None and (not isinstance(batch, dict) or batch.get("means") not in ("prompts", "completions")
                              or not isinstance(batch.get("size"), int) or not batch.get("source")):
        raise ConfigError(f"reference {name!r}: batch must be {{size, means: prompts | completions, source}}")
    return Reference(name, data.get("source", book), rows, batch, dict(sources))
