"""The config schema owns its defaults: no function below the config package restates one in its
signature (`top_k=5`, `alpha=0.05`, `max_age_days=7.0`...), so changing a default in its section changes
every path, and a caller that forgets a setting gets a TypeError, not a silent second default."""

import ast
import dataclasses

from conftest import ROOT
from skillos import config

# the library below the config package (toolkit's cli*.py, api.py and config/ are above or at it)
LIBRARY = ["evals", "training", "ledger", "toolkit/repo", "toolkit/gates", "toolkit/files.py"]
# a parameter named differently from the config key it carries
ALIASES = {"n_boot": "bootstrap", "k": "top_k", "start": "max_edits", "end": "min_edits",
           "retrieval_mode": "mode"}
# the same name, another quantity: the tiny model's and the format warm-up's own settings
NOT_THE_CONFIG = {("evals/backends/tiny_model.py", "build", "seed"), ("training/common/warmup.py", "warm_up", "seed"),
                  # a TRL argument dataclass: every field needs a default (GRPOConfig's all have one);
                  # the trainer always passes skillgate.selector_coef
                  ("training/selector/grpo.py", "SelectorGRPOConfig", "selector_coef")}


def config_defaults() -> dict:
    """leaf name -> the set of defaults the schema gives keys of that name."""
    found: dict = {}

    def walk(obj):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if dataclasses.is_dataclass(value):
                walk(value)
            elif value is not None and value != "" and not isinstance(value, (list, dict)):
                found.setdefault(f.name, set()).add(value)

    walk(config.Config())
    return found


def restated_defaults() -> list[str]:
    defaults, hits = config_defaults(), []
    files = [p for root in LIBRARY for p in ((ROOT / root).rglob("*.py") if (ROOT / root).is_dir()
                                              else [ROOT / root])]
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(), rel)):
            if isinstance(node, ast.ClassDef) and is_dataclass(node):
                hits += restated_fields(rel, node, defaults)
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            positional = a.posonlyargs + a.args
            pairs = list(zip(positional[len(positional) - len(a.defaults):], a.defaults))
            pairs += [(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
            for arg, default in pairs:
                key = ALIASES.get(arg.arg, arg.arg)
                if not isinstance(default, ast.Constant) or (rel, node.name, arg.arg) in NOT_THE_CONFIG:
                    continue
                value = default.value
                if value is None or isinstance(value, bool) or value == "":
                    continue
                if value in defaults.get(key, ()):
                    hits.append(f"{rel}:{node.lineno} {node.name}({arg.arg}={value!r}) restates "
                                f"the config default of {key}")
    return hits


def is_dataclass(node: ast.ClassDef) -> bool:
    """`@dataclass` or `@dataclass(...)` (also as dataclasses.dataclass)."""
    for d in node.decorator_list:
        d = d.func if isinstance(d, ast.Call) else d
        if (d.id if isinstance(d, ast.Name) else getattr(d, "attr", None)) == "dataclass":
            return True
    return False


def restated_fields(rel: str, node: ast.ClassDef, defaults: dict) -> list[str]:
    """Dataclass fields below the config package that restate a config default (`top_k: int = 5`, or
    `field(default=5)`): a second home of the default, which would drift from the schema's."""
    hits = []
    for stmt in node.body:
        if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name) or stmt.value is None:
            continue
        default = stmt.value
        if isinstance(default, ast.Call) and getattr(default.func, "id", None) == "field":
            default = next((k.value for k in default.keywords if k.arg == "default"), None)
        name = stmt.target.id
        key = ALIASES.get(name, name)
        if not isinstance(default, ast.Constant) or (rel, node.name, name) in NOT_THE_CONFIG:
            continue
        value = default.value
        if value is None or isinstance(value, bool) or value == "":
            continue
        if value in defaults.get(key, ()):
            hits.append(f"{rel}:{stmt.lineno} {node.name}.{name} = {value!r} restates the config default of {key}")
    return hits


def test_no_default_is_restated_below_config():
    assert restated_defaults() == []


def test_the_check_finds_a_restated_default(tmp_path, monkeypatch):
    """The check can fail: a planted `top_k=5` below the config package is found."""
    planted = ROOT / "evals" / "_planted_default.py"
    planted.write_text("def search(query, top_k=5, alpha=0.05):\n    return query\n")
    try:
        hits = restated_defaults()
    finally:
        planted.unlink()
    assert [h.split(" ", 1)[1] for h in hits] == [
        "search(top_k=5) restates the config default of top_k",
        "search(alpha=0.05) restates the config default of alpha"]


def test_the_check_finds_a_restated_dataclass_default():
    """Dataclass fields count too: a planted `top_k: int = 5` (or field(default=0.05)) is found."""
    planted = ROOT / "evals" / "_planted_fields.py"
    planted.write_text("from dataclasses import dataclass, field\n\n\n@dataclass\nclass Knobs:\n"
                       "    top_k: int = 5\n    alpha: float = field(default=0.05)\n    seen: int = 7\n")
    try:
        hits = restated_defaults()
    finally:
        planted.unlink()
    assert [h.split(" ", 1)[1] for h in hits] == [
        "Knobs.top_k = 5 restates the config default of top_k",
        "Knobs.alpha = 0.05 restates the config default of alpha"]
