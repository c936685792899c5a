"""Structural rules the layering test does not see, read from the package's source:

* no module reaches into another's private names (`from skillos.x import _name`, or
  `obj._name` where `_name` belongs to another module): what is shared is public, with a docstring;
* the backend names are listed in one module (skillos/registry.py): no tuple, list, set or dict
  of two or more backend names anywhere else;
* a run folder's file names are spelled in one module (evals/run_folder.py).

Each rule is also run on a planted violation, so a checker that finds nothing cannot pass.
"""

import ast
from pathlib import Path

from conftest import ROOT

from skillos.evals import run_folder
from skillos.registry import BACKENDS

PACKAGE_DIRS = ("toolkit", "evals", "training", "ledger")
BACKENDS_HOME = "toolkit/registry.py"
RUN_FOLDER_HOME = "evals/run_folder.py"
RUN_FOLDER_NAMES = {run_folder.CONFIG, run_folder.REPORT, run_folder.TRACES, run_folder.SWEEP, run_folder.HISTORY,
                    *run_folder.ROW_FILES.values()}
# The same spelling meaning something else, with the reason.
NOT_RUN_FOLDER = {
    ("toolkit/gates/trace.py", "config.yaml"): "the label of a config built in code (no file of its own)",
}
# training/textopt/sleep lays out nights/ID/ and proposals/ID/ (training/textopt/sleep/stage.py), not run folders.
OWN_LAYOUT = ("training/textopt/sleep/",)


def package_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
            for d in PACKAGE_DIRS for p in sorted((ROOT / d).rglob("*.py"))}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def defined_private_names(tree: ast.AST) -> set:
    """Private names a module defines: functions, classes, module names, and self./cls. attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
    return {n for n in names if _private(n)}


def private_crossings(sources: dict[str, str]) -> list[str]:
    """`from skillos... import _name`, and `obj._name` where `_name` is a private name the package
    defines but this module does not (a third-party private like os._exit is not the package's)."""
    trees = {path: ast.parse(text) for path, text in sources.items()}
    defined = {path: defined_private_names(tree) for path, tree in trees.items()}
    ours = set().union(*defined.values())
    found = []
    for path, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("skillos"):
                found += [f"{path}:{node.lineno}: from {node.module} import {a.name}"
                          for a in node.names if _private(a.name)]
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                owner = node.value
                if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                    continue
                if node.attr in ours and node.attr not in defined[path]:
                    found.append(f"{path}:{node.lineno}: {ast.unparse(node)}")
    return found


def backend_lists(sources: dict[str, str], names: set) -> list[str]:
    """Collections of two or more backend names outside the backend table."""
    found = []
    for path, text in sources.items():
        if path == BACKENDS_HOME:
            continue
        for node in ast.walk(ast.parse(text)):
            items = node.keys if isinstance(node, ast.Dict) else \
                node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else []
            listed = [i.value for i in items if isinstance(i, ast.Constant) and i.value in names]
            if len(listed) >= 2:
                found.append(f"{path}:{node.lineno}: {listed}")
    return found


def run_folder_names(sources: dict[str, str], names: set) -> list[str]:
    """Run-folder file names spelled outside evals/run_folder.py."""
    found = []
    for path, text in sources.items():
        if path == RUN_FOLDER_HOME or path.startswith(OWN_LAYOUT):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and node.value in names and (path, node.value) not in NOT_RUN_FOLDER:
                found.append(f"{path}:{node.lineno}: {node.value!r}")
    return found


def test_no_module_uses_another_modules_private_names():
    assert private_crossings(package_sources()) == []


def test_a_private_import_or_reach_is_caught():
    planted = {
        "evals/a.py": "def _helper():\n    pass\n\n\nclass Box:\n    def __init__(self):\n        self._inside = 1\n",
        "evals/b.py": "from skillos.evals.a import _helper\n\n\ndef peek(box):\n    return box._inside\n",
        "evals/c.py": "import os\n\n\ndef bye():\n    os._exit(0)\n",  # not the package's private
    }
    found = private_crossings(planted)
    assert len(found) == 2 and "import _helper" in found[0] and "box._inside" in found[1]


def test_backend_names_are_listed_only_in_the_backend_table():
    names = set(BACKENDS.names())
    assert {"heuristic", "openai", "anthropic", "vllm", "hf"} <= names
    assert backend_lists(package_sources(), names) == []


def test_a_second_list_of_backend_names_is_caught():
    names = set(BACKENDS.names())
    planted = {"evals/x.py": 'LOCAL = ("hf", "vllm")\nKEYS = {"openai": 1, "anthropic": 2}\nONE = ("hf",)\n'}
    assert len(backend_lists(planted, names)) == 2


def test_run_folder_file_names_are_spelled_in_one_module():
    assert run_folder_names(package_sources(), RUN_FOLDER_NAMES) == []


def test_a_run_folder_name_spelled_elsewhere_is_caught():
    planted = {"toolkit/view/x.py": 'ROWS = "games.jsonl"\nHELP = "a run folder (games.jsonl)"\n',
               RUN_FOLDER_HOME: 'GAMES = "games.jsonl"\n'}
    assert run_folder_names(planted, RUN_FOLDER_NAMES) == ["toolkit/view/x.py:1: 'games.jsonl'"]


def test_the_package_dirs_are_the_installed_packages():
    """The scan covers every source folder that installs (a new one would escape the rules)."""
    import tomllib

    dirs = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"].values())
    assert dirs == set(PACKAGE_DIRS) and all(Path(ROOT, d).is_dir() for d in dirs)


def test_the_batch_s_derived_values_have_one_home():
    """Rows per step, completions per step and rollouts per generation are computed in
    config/derived.py only; the trainer's dataset, the dry-run, the step plan and the batch gate agree on a config
    whose generation batch is smaller than its optimizer step (TRL: two generations a step)."""
    import re

    from skillos import config
    from skillos.gates import static
    from skillos.training.common import plan

    bare_division = re.compile(r"//\s*\(?\s*(t|cfg\.training|ctx\.cfg\.training)\.num_generations")
    for path, text in package_sources().items():
        if path != "toolkit/config/derived.py":
            assert not bare_division.search(text), f"{path} derives a per-step count itself"
    cfg = config.load(ROOT / "training" / "configs" / "single-gpu-lora.yaml")
    assert cfg.training.generation_batch_size < config.completions_per_step(cfg)
    assert config.groups_per_step(cfg) == static.derived(cfg, "prompts_per_step") == \
        config.completions_per_step(cfg) // cfg.training.num_generations
    step = plan.step_plan(cfg)
    assert step.rollouts == config.completions_per_step(cfg)
    assert step.concurrency <= config.rollouts_per_generation(cfg)


def no_model_comparisons(sources: dict[str, str]) -> list[str]:
    """Comparisons with the no-model backend's name spelled out (registry.NO_MODEL / uses_model
    are its one home), outside the backend table."""
    from skillos.registry import NO_MODEL

    found = []
    for path, text in sources.items():
        if path == BACKENDS_HOME:
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            values = [c for s in sides for c in ([s] + list(getattr(s, "elts", [])))]
            if any(isinstance(v, ast.Constant) and v.value == NO_MODEL for v in values):
                found.append(f"{path}:{node.lineno}")
    return found


def test_the_no_model_backend_is_asked_of_the_registry():
    assert no_model_comparisons(package_sources()) == []
    planted = {"evals/x.py": 'def f(b):\n    return b.backend == "heuristic" or b.judge in (None, "heuristic")\n'}
    assert no_model_comparisons(planted) == ["evals/x.py:2"] * 2  # the == and the tuple


SLATE_PACKAGE = "skillos.evals.envs.slate"
SLATE_HOME = "evals/envs/slate/"


def slate_imports(sources: dict[str, str]) -> list[str]:
    """Imports of the slate's own modules from outside its folder: every other module asks
    `environment("slate")` (evals/envs/slate/environment.py) for what it uses."""
    found = []
    for path, text in sources.items():
        if path.startswith(SLATE_HOME):
            continue
        for node in ast.walk(ast.parse(text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == SLATE_PACKAGE or n.startswith(SLATE_PACKAGE + ".") for n in names):
                found.append(f"{path}:{node.lineno}")
    return found


def test_the_slate_is_reached_only_through_the_environment_protocol():
    assert slate_imports(package_sources()) == []
    planted = {"training/x.py": "def f():\n    from skillos.evals.envs.slate.slates import SYSTEM\n    return SYSTEM\n",
               "evals/y.py": "import skillos.evals.envs.slate.audit\n",
               "evals/envs/slate/z.py": "from skillos.evals.envs.slate import slates\n"}
    assert slate_imports(planted) == ["training/x.py:2", "evals/y.py:1"]


def name_branches(sources: dict[str, str], names, about: str, home: str) -> list[str]:
    """Comparisons (==, !=, in, not in) of an expression that mentions `about` ("trainer") with a
    literal registered name: a branch on the name where the registry entry should be asked what
    it can do. The registry itself (`home`) is where names are spelled."""
    def literals(node) -> set:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        return set()

    found = []
    for path, text in sources.items():
        if path == home:
            continue
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            named = set().union(*(literals(o) for o in operands)) & set(names)
            others = [ast.get_source_segment(text, o) or "" for o in operands if not literals(o)]
            if named and any(about in o for o in others):
                found.append(f"{path}:{node.lineno}")
    return found


def test_no_module_branches_on_a_trainer_name():
    from skillos.registry import TRAINERS

    assert name_branches(package_sources(), TRAINERS.names(), "trainer", BACKENDS_HOME) == []
    planted = {"toolkit/gates/x.py": 'def f(cfg, t):\n    if cfg.skillgate.trainer == "curator":\n'
                                     '        return t.trainer in ("selector-bc", "selector-dpo")\n'
                                     '    return cfg.section == "curator"\n'}
    assert name_branches(planted, TRAINERS.names(), "trainer", BACKENDS_HOME) == ["toolkit/gates/x.py:2",
                                                                                 "toolkit/gates/x.py:3"]


def test_no_module_branches_on_a_compute_backend_name():
    from skillos.registry import COMPUTE

    assert name_branches(package_sources(), COMPUTE.names(), "backend", BACKENDS_HOME) == []
    planted = {"training/x.py": 'def f(cfg, p):\n    if cfg.compute.backend not in ("accelerate", "modal"):\n'
                                '        return p["backend"] == "local"\n    return cfg.sweep.serve == "local"\n'}
    assert name_branches(planted, COMPUTE.names(), "backend", BACKENDS_HOME) == ["training/x.py:2", "training/x.py:3"]


def test_every_compute_backend_that_trains_has_its_plan_and_run():
    from skillos.registry import COMPUTE

    for entry in COMPUTE:
        if entry.trains:
            plan, run = entry.launch_functions()
            assert callable(plan) and callable(run), entry.name
        assert entry.in_process or entry.watched or not entry.trains, entry.name


MODULE_ROOTS = {"toolkit": "skillos", "evals": "skillos.evals", "training": "skillos.training", "ledger": "skillos.ledger"}


def module_name(path: str) -> str:
    """toolkit/gates/static.py -> skillos.gates.static (the installed layout)."""
    folder, _, rest = path.partition("/")
    parts = rest.removesuffix(".py").split("/")
    return ".".join([MODULE_ROOTS[folder]] + [p for p in parts if p != "__init__"])


def marked_checks(sources: dict[str, str]) -> dict[str, int]:
    """Module -> how many of its functions carry a phase decorator (@static, @dry_run, @machine)."""
    found = {}
    for path, text in sources.items():
        n = sum(1 for node in ast.walk(ast.parse(text)) if isinstance(node, ast.FunctionDef)
                for d in node.decorator_list if isinstance(d, ast.Name) and d.id in ("static", "dry_run", "machine"))
        if n:
            found[module_name(path)] = n
    return found


def test_every_marked_gate_check_is_registered_explicitly():
    """A check is run only where its module is listed: the gates' own in CHECK_MODULES, a method's in
    its METHODS entry; a marked function anywhere else would never run."""
    from skillos.gates import core

    marked = marked_checks(package_sources())
    assert set(marked) <= set(core.check_modules()), "a module with checks that neither CHECK_MODULES nor METHODS lists"
    assert sum(len(core.checks(p)) for p in core.PHASES) == sum(marked.values())
    assert marked_checks({"toolkit/gates/new.py": "@static\ndef f(ctx):\n    pass\n"}) == {"skillos.gates.new": 1}


def marked_resolvers(sources: dict[str, str]) -> dict[str, int]:
    """Module -> how many of its functions carry skillos.tracing's @resolver(...)."""
    found = {}
    for path, text in sources.items():
        n = sum(1 for node in ast.walk(ast.parse(text)) if isinstance(node, ast.FunctionDef)
                for d in node.decorator_list if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "resolver")
        if n:
            found[module_name(path)] = n
    return found


def test_every_trace_resolver_is_asked_where_it_is_registered():
    """A resolver is asked only where its module is listed: the gates' trace, or a method's METHODS
    entry (`trace`); one anywhere else, or two of one name (the second hides the first), would never run."""
    from skillos.registry import METHODS
    from skillos.tracing import resolvers

    marked = marked_resolvers(package_sources())
    listed = {"skillos.gates.trace"} | {m.trace for m in METHODS if m.trace}
    assert set(marked) <= listed, "a module with trace resolvers that no METHODS entry names"
    assert {module: len(resolvers(module)) for module in marked} == marked  # none hidden by a redefinition
    assert marked_resolvers({"training/new/trace.py": "@resolver(r'^x$')\ndef f(t, key, value):\n    pass\n"}) \
        == {"skillos.training.new.trace": 1}
