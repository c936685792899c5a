"""A sweep: several skill repos, or several curator checkpoints (each curating its own repo from
empty), on one target executor, with a fresh control in the same run, every arm on the same
held-out games.

What the reference's model card taught: the last checkpoint was the worst in every run, the
peak moved with the seed, and lift on the training executor did not predict lift on a bigger
one. So the target executor is required, the table is corrected over the whole family (Holm,
from the run's report), and the best repo is reported with the caveat that it was selected on
the games it is scored on.

Cross-domain transfer (`--env`): the same curators evaluated on another environment (a
household-trained checkpoint on reasoning, and back), each target with its own control measured
in the same sweep, and one family correction (Holm) over every comparison of every direction:
`family_table`.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

from skillos.config.loading import validate
from skillos.config.schema import Config
from skillos.errors import SkillosError
from skillos import safety
from skillos.config.loading import from_dict
from skillos.evals import run_folder, stats
from skillos.evals.arms import load_games
from skillos.evals.curation import SURFACE_FILE
from skillos.evals.envs.registry import environment
from skillos.evals.runner import CURATED
from skillos.evals.stats import ci_excludes_zero
from skillos.registry import NO_MODEL, model_backends
from skillos.safety import read_json_file

SELECTION_CAVEAT = ("the best repo was chosen on the same held-out games it is scored on, so its "
                    "lift is optimistic (best of {n}); confirm it on fresh games before claiming it")


def parse_executor(spec: str) -> tuple[str, str | None]:
    """'heuristic', or BACKEND:MODEL for a model backend (openai, anthropic, hf, vllm)."""
    backend, _, model = spec.partition(":")
    if backend == NO_MODEL and not model:
        return backend, None
    if backend in model_backends() and model:
        return backend, model
    raise SkillosError(f"--executor {spec!r}: expected heuristic or one of "
                       f"{', '.join(b + ':MODEL' for b in model_backends())}")


def sweep_config(cfg: Config, repos: list, executor: str, checkpoints: list = (),
                 env: str | None = None) -> Config:
    """The eval config of a sweep: the control, one `repo:NAME` arm per skill folder and one
    `curator:NAME` arm per checkpoint (which curates from an empty repo, as closed_loop does).
    `env`: the target environment, if not the config's own (a cross-domain sweep); its control
    is the config's control arm, played on that environment in the same run."""
    if not repos and not checkpoints:
        raise SkillosError("sweep needs at least one --repo folder or --checkpoint")
    swept = copy.deepcopy(cfg)
    swept.source = cfg.source
    if env is not None and env != cfg.env.name:
        target = environment(env)  # an unknown name is a one-line error
        swept.env.name, swept.env.max_steps = env, target.max_steps
        if cfg.reference is not None:  # diffed against the target domain's table
            swept.reference = target.reference
        swept.experiment.name = f"{cfg.experiment.name}-on-{env}"
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
    swept.experiment.name = f"{swept.experiment.name}-sweep"
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


def curated_on(folder: str | Path) -> tuple[set, str]:
    """The content hashes of the games a skill repo was curated on, and where that was read:
    its `.curated` list (written as a learning arm curates), else the rows of the run it came
    from (RUN/repo-ARM: the arm's rows in RUN/games.jsonl and RUN/curation.jsonl, hashed by
    regenerating RUN's games from RUN/config.yaml). Empty: no record of any."""

    folder = Path(folder)
    if (folder / CURATED).is_file():
        text = safety.read_text(folder / CURATED, 64 << 20, "curated-games list")
        return {line.strip() for line in text.splitlines() if line.strip()}, str(folder / CURATED)

    run, arm = folder.parent, run_folder.arm_of_repo(folder)
    if arm is None or not (run / run_folder.CONFIG).is_file():
        return set(), ""

    try:
        cfg = from_dict(run_folder.read_config(run))
        ids = {(r.get("phase", "eval"), r["game_id"]) for phase in ("eval", "train")
               for r in run_folder.read_rows(run, phase) if r.get("arm") == arm}
        if not ids:
            return set(), ""
        hashes = set()
        for phase, split, n in (("eval", cfg.env.split, cfg.env.n_games),
                                ("train", cfg.env.train_split, cfg.env.n_train_games)):
            if any(p == phase for p, _ in ids) and n:
                hashes |= {g.content_hash for g in load_games(cfg, split, n) if (phase, g.id) in ids}
        return hashes, f"{run} (arm {arm}'s rows)"
    except (SkillosError, KeyError, TypeError, ValueError):
        return set(), ""


def check_not_curated_on(cfg: Config, repos: list) -> None:
    """Refuse a --repo curated on any of the held-out games this sweep scores it on: its lift
    there is memory of the answers, not transfer."""
    if not repos:
        return

    held_out = None
    for folder in repos:
        hashes, where = curated_on(folder)
        if not hashes:
            continue
        if held_out is None:
            held_out = {g.content_hash for g in load_games(cfg, cfg.env.split, cfg.env.n_games)}
        overlap = hashes & held_out
        if overlap:
            raise SkillosError(f"--repo {folder}: curated on {len(overlap)} of the {len(held_out)} held-out games this "
                               f"sweep scores it on (content hashes, from {where}); score it on games it never saw "
                               f"(another env.split or env.seed), or sweep a repo curated elsewhere")


def _marker(folder: str) -> dict:
    marker = Path(folder) / SURFACE_FILE
    return read_json_file(marker, "curator checkpoint marker", 1 << 16) if marker.is_file() else {}


def _trained_surface(folder: str) -> str | None:
    return _marker(folder).get("tools")


def trained_env(folder: str) -> str | None:
    """The environment a checkpoint was trained on (skillos train records it); None: unrecorded."""
    return _marker(folder).get("env")


def step_of(name: str, index: int) -> int:
    """The checkpoint step a repo's name carries (checkpoint-40, step_40), else its position."""
    found = re.findall(r"\d+", name)
    return int(found[-1]) if found else index


def summarize(result: dict, sources: dict | None = None) -> dict:
    """The sweep table of one run. `sources`: arm name -> the environment it was trained on."""
    rows, target = [], result["env"]["name"]
    for i, comp in enumerate(c for c in result["comparisons"] if c["treatment"].startswith(("repo:", "curator:"))):
        name = comp["treatment"].split(":", 1)[1]
        source = (sources or {}).get(name)
        rows.append({"repo": name, "step": step_of(name, i), "target_env": target, "source_env": source,
                     "transfer": None if source is None else source != target, **{k: comp[k] for k in (
            "treatment_rate", "control_rate", "difference", "ci_low", "ci_high", "p_value", "b", "c",
            "p_adjusted", "mde", "n_paired", "n_dropped", "significant", "verdict")},
            **{k: comp.get(k) for k in ("attempted", "control_unmeasured", "treatment_unmeasured", "attrition_p")},
            "note": _note(comp, result)})
    rows.sort(key=lambda r: r["step"])
    measured = [r for r in rows if r["treatment_rate"] is not None]
    best = max(measured, key=lambda r: r["treatment_rate"]) if measured else None
    return {"rows": rows, "best": best and best["repo"],
            "caveat": SELECTION_CAVEAT.format(n=len(rows)),
            "last_is_best": bool(best) and best is measured[-1]}


def _note(comp: dict, result: dict) -> str:
    """The comparison's note, and whether its CI excludes 0 while the family-corrected exact test
    does not reject (a CI read alone would claim what the test does not)."""
    note = comp.get("note") or ""
    p_adj, alpha = comp.get("p_adjusted"), comp.get("alpha")
    if ci_excludes_zero(comp.get("ci_low"), comp.get("ci_high")) and p_adj is not None and alpha is not None \
            and p_adj >= alpha and "bootstrap CI excludes 0" not in note:
        note = "; ".join(x for x in (note, f"the bootstrap CI excludes 0 but the family-corrected exact test "
                                           f"does not reject (p adjusted {p_adj:.3g} >= alpha {alpha:g})") if x)
    return note


def sources_of(cfg: Config) -> dict:
    """Curator arm name -> the environment its checkpoint was trained on (None: unrecorded)."""
    return {name: trained_env(folder) for name, folder in cfg.eval.curators.items()}


def family_table(summaries: dict, alpha: float) -> dict:
    """One family over every direction of a cross-domain sweep: `summaries` maps a target
    environment to its summary; every row is judged together by `stats.verdicts` (Holm), so
    evaluating in two directions is not two chances at a finding. An unmeasured row is a member
    at p = 1, as everywhere a family is corrected."""
    from types import SimpleNamespace

    rows = [dict(r) for summary in summaries.values() for r in summary["rows"]]
    keyed = {f"{r['target_env']}:{r['repo']}": r for r in rows}
    name = "cross-domain sweep on " + " and ".join(summaries)
    decided = stats.verdicts({k: SimpleNamespace(**{f: r.get(f) for f in stats.JUDGED_FIELDS}, treatment=r["repo"],
                                                 control="the control", note=None) for k, r in keyed.items()},
                             alpha=alpha, family=name, correction="holm")
    for key, r in keyed.items():
        r["p_family"], r["verdict_family"] = decided[key].p_adjusted, decided[key].to_dict()
    return {"rows": rows, "family": name, "family_size": len(rows), "correction": "holm",
            "targets": list(summaries), "unmeasured": sum(r["p_value"] is None for r in rows)}


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
