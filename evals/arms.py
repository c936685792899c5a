"""How a launch plays its games, from the config: which games (`game_sets`, `load_games`), which
arms learn, and every setting of `runner.run_arm` the config decides (`arm_settings`). Eval,
optimize, training and the gates' dry-run and trace read them here, so a key the gates check is
the key the games are played with.
"""

from __future__ import annotations

from skillos.config.schema import Config
from skillos.evals.envs.registry import environment

LEARNING_ARMS = ("closed_loop", "shuffled")  # arms with a curator and a repo folder of their own


def learns(arm: str) -> bool:
    """Arms that curate (train games first, then held-out): closed_loop, shuffled, curator:NAME."""
    return arm in LEARNING_ARMS or arm.startswith("curator:")


def load_games(cfg: Config, split: str, n: int, progress=None):
    """The tasks of a split, from the config's environment (skillos.evals.envs.registry)."""
    return environment(cfg).load_tasks(cfg, split, n, progress)


def plays(cfg: Config) -> int:
    """The games one run of the config plays, counting every play: each held-out game eval.trials
    times per arm, each train game once per learning arm (the cost gate and the plan read it)."""
    learning = [arm for arm in cfg.eval.arms if learns(arm)]
    return cfg.env.n_games * cfg.eval.trials * len(cfg.eval.arms) + cfg.env.n_train_games * len(learning)


def game_sets(cfg: Config) -> dict:
    """The (split, number of games) a launch loads for its held-out and train games: the one place
    eval, optimize (held_out is its sealed test) and the gates' trace read them from."""
    return {"held_out": (cfg.env.split, cfg.env.n_games), "train": (cfg.env.train_split, cfg.env.n_train_games)}


def arm_settings(cfg: Config, arm: str = "", *, abort_on_outage: bool = True,
                 curate_each_game: bool = False) -> dict:
    """Every keyword of `runner.run_arm` the config decides, for `arm`: max_steps, top_k,
    retrieval_mode, the error budget, concurrency and wave_size.

    `abort_on_outage=False` drops the error budget (the dry-run counts unmeasured games instead
    of aborting on them). `curate_each_game` plays one game at a time and curates after each
    (optimize's candidates: each curation sees the game before it)."""
    return dict(max_steps=environment(cfg).turns(cfg), top_k=cfg.retrieval.top_k,
                retrieval_mode="shuffled" if arm == "shuffled" else cfg.retrieval.mode,
                max_error_rate=cfg.eval.max_error_rate if abort_on_outage else None,
                concurrency=1 if curate_each_game else cfg.eval.concurrency,
                wave_size=1 if curate_each_game else cfg.eval.wave_size)
