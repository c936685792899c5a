"""One evaluation run: every arm of the config on the same held-out games, then the report.

Arms: `no_memory` (empty repo), `closed_loop` (the curator learns on train games, then keeps
curating after every held-out game, as SkillOS evaluates), `static_repo` (a fixed skill folder,
no curation), `shuffled` (closed_loop with k random skills instead of BM25: content vs context).
All arms play the identical held-out list, so every comparison is paired.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Callable

import yaml

from skillos.config import Config
from skillos.errors import SkillError, SkillosError
from skillos.evals import report as reporting
from skillos.evals.curator import make_curator
from skillos.evals.executor import make_executor
from skillos.evals.runner import run_arm
from skillos.repo import SkillRepo

Progress = Callable[[str, str, int, int], None]  # (arm, phase, done, total)


def load_games(cfg: Config, split: str, n: int, progress=None):
    from skillos.evals.envs.alfworld import games

    if cfg.env.data == "official":
        root = os.environ.get("ALFWORLD_DATA")
        if not root:
            raise SkillosError("env.data is 'official' but ALFWORLD_DATA is not set")
        found = games.load_official(root, split)
        if len(found) < n:
            raise SkillosError(f"ALFWORLD_DATA {split} has {len(found)} playable games; asked for {n}")
        return found[:n]
    return games.make_games(split, n, cfg.env.seed, progress=progress)


def default_out_dir(cfg: Config) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(cfg.eval.output_dir) / f"{cfg.experiment.name}-{stamp}"


def run_eval(cfg: Config, out_dir: str | Path | None = None, progress: Progress | None = None) -> dict:
    """Run every arm; write games.jsonl, curation.jsonl, the curated repo and report.json."""
    out = Path(out_dir) if out_dir else default_out_dir(cfg)
    if out.exists() and any(out.iterdir()):
        raise SkillosError(f"{out}: output folder exists and is not empty; choose another --out")
    static = None
    if "static_repo" in cfg.eval.arms:
        try:  # fail on a bad folder before any game is played
            static = SkillRepo.load(cfg.eval.static_repo)
        except SkillError as exc:
            raise SkillosError(f"eval.static_repo: {exc}") from None
    from skillos.evals.envs.alfworld.env import AlfworldEnv

    def gen_progress(split):
        return (lambda done, total: progress("generate", split, done, total)) if progress else None

    held_out = load_games(cfg, cfg.env.split, cfg.env.n_games, gen_progress(cfg.env.split))
    learns = {"closed_loop", "shuffled"} & set(cfg.eval.arms)
    train = []
    if learns and cfg.env.n_train_games:
        train = load_games(cfg, cfg.env.train_split, cfg.env.n_train_games, gen_progress(cfg.env.train_split))
    overlap = {g.content_hash for g in train} & {g.content_hash for g in held_out}
    if overlap:
        raise SkillosError(f"{len(overlap)} held-out games also appear in {cfg.env.train_split}; refusing to run")

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    env, executor = AlfworldEnv(fast=True), make_executor(cfg.executor)
    common = dict(env=env, executor=executor, max_steps=cfg.env.max_steps, top_k=cfg.retrieval.top_k)
    rows = {}
    for arm in cfg.eval.arms:
        curator, mode = None, cfg.retrieval.mode
        if arm == "no_memory":
            repo = SkillRepo(None)
        elif arm == "static_repo":
            repo = static
        else:
            repo = SkillRepo(out / f"repo-{arm}")
            curator = make_curator(cfg.curator)
            mode = "shuffled" if arm == "shuffled" else mode
            if train:
                run_arm(arm, train, repo=repo, curator=curator, retrieval_mode=mode,
                        out=out / "curation.jsonl", phase="train",
                        on_game=_tick(progress, arm, "train", len(train)), **common)
        rows[arm] = run_arm(arm, held_out, repo=repo, curator=curator, retrieval_mode=mode,
                            out=out / "games.jsonl", phase="eval",
                            on_game=_tick(progress, arm, "eval", len(held_out)), **common)
    result = reporting.build(cfg, rows, out, n_train=len(train))
    (out / "report.json").write_text(json.dumps(result, indent=1))
    return result


def _tick(progress, arm, phase, total):
    if progress is None:
        return None
    count = {"done": 0}

    def on_game(_row):
        count["done"] += 1
        progress(arm, phase, count["done"], total)

    return on_game
