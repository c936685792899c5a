"""A sweep: several skill repos, or several curator checkpoints (each curating its own repo from
empty), on one target executor, with a fresh control in the same run, every arm on the same
held-out games.

What the reference's model card taught: the last checkpoint was the worst in every run, the
peak moved with the seed, and lift on the training executor did not predict lift on a bigger
one. So the target executor is required, the table is corrected over the whole family (Holm,
from the run's report), and the best repo is reported with the caveat that it was selected on
the games it is scored on.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

from skillos.config import Config, validate
from skillos.errors import SkillosError

SELECTION_CAVEAT = ("the best repo was chosen on the same held-out games it is scored on, so its "
                    "lift is optimistic (best of {n}); confirm it on fresh games before claiming it")


def parse_executor(spec: str) -> tuple[str, str | None]:
    """'heuristic', or BACKEND:MODEL for a model backend (openai, anthropic, hf, vllm)."""
    from skillos.evals.backends.chat import MODEL_BACKENDS

    backend, _, model = spec.partition(":")
    if backend == "heuristic" and not model:
        return backend, None
    if backend in MODEL_BACKENDS and model:
        return backend, model
    raise SkillosError(f"--executor {spec!r}: expected heuristic or one of "
                       f"{', '.join(b + ':MODEL' for b in MODEL_BACKENDS)}")


def sweep_config(cfg: Config, repos: list, executor: str, checkpoints: list = ()) -> Config:
    """The eval config of a sweep: the control, one `repo:NAME` arm per skill folder and one
    `curator:NAME` arm per checkpoint (which curates from an empty repo, as closed_loop does)."""
    if not repos and not checkpoints:
        raise SkillosError("sweep needs at least one --repo folder or --checkpoint")
    swept = copy.deepcopy(cfg)
    swept.source = cfg.source
    backend, model = parse_executor(executor)
    swept.executor.backend, swept.executor.model = backend, model
    repo_names = _names(repos, "--repo")
    curator_names = _names(checkpoints, "--checkpoint")
    for name, folder in curator_names.items():
        trained = _trained_surface(folder)
        if trained:  # evaluate each checkpoint on the surface it was trained on
            swept.curator.tools = trained
    control = cfg.eval.control.arm
    swept.eval.arms = ([control] + [f"repo:{n}" for n in repo_names] + [f"curator:{n}" for n in curator_names])
    swept.eval.static_repos, swept.eval.curators = repo_names, curator_names
    swept.experiment.name = f"{cfg.experiment.name}-sweep"
    return validate(swept)


def _names(folders, flag: str) -> dict:
    names: dict[str, str] = {}
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise SkillosError(f"{flag} {folder}: no such folder")
        name, n = folder.name, 1
        while name in names:
            n += 1
            name = f"{folder.name}-{n}"
        names[name] = str(folder.resolve())  # given on the command line: the shell's cwd
    return names


def _trained_surface(folder: str) -> str | None:
    import json

    from skillos.evals.curation import SURFACE_FILE

    marker = Path(folder) / SURFACE_FILE
    return json.loads(marker.read_text()).get("tools") if marker.is_file() else None


def step_of(name: str, index: int) -> int:
    """The checkpoint step a repo's name carries (checkpoint-40, step_40), else its position."""
    found = re.findall(r"\d+", name)
    return int(found[-1]) if found else index


def summarize(result: dict) -> dict:
    rows = []
    for i, comp in enumerate(c for c in result["comparisons"] if c["treatment"].startswith(("repo:", "curator:"))):
        name = comp["treatment"].split(":", 1)[1]
        rows.append({"repo": name, "step": step_of(name, i), **{k: comp[k] for k in (
            "treatment_rate", "control_rate", "difference", "ci_low", "ci_high", "p_value",
            "p_adjusted", "mde", "n_paired", "n_dropped", "significant", "verdict")}})
    rows.sort(key=lambda r: r["step"])
    measured = [r for r in rows if r["treatment_rate"] is not None]
    best = max(measured, key=lambda r: r["treatment_rate"]) if measured else None
    return {"rows": rows, "best": best and best["repo"],
            "caveat": SELECTION_CAVEAT.format(n=len(rows)),
            "last_is_best": bool(best) and best is measured[-1]}


def plot(summary: dict, path: Path) -> str:
    """Lift vs step with 95% CIs as a PNG; a one-line reason if it cannot be drawn."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "no PNG: matplotlib is not installed (pip install skillos[plot])"
    rows = [r for r in summary["rows"] if r["difference"] is not None]
    if not rows:
        return "no PNG: no repo was measured against the control"
    steps = [r["step"] for r in rows]
    lift = [100 * r["difference"] for r in rows]
    err = [[100 * (r["difference"] - r["ci_low"]) for r in rows],
           [100 * (r["ci_high"] - r["difference"]) for r in rows]]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.errorbar(steps, lift, yerr=err, marker="o", capsize=3)
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.set_xlabel("checkpoint step")
    ax.set_ylabel("lift over control (points, 95% CI)")
    ax.set_title(f"sweep: {len(rows)} repos vs a fresh control")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)
