"""SkillGate's baselines: behaviour cloning on the gold first read and DPO pairs of gold-read
over misleading-read, built from the same frozen slates (and, slow, a 1-step run of each)."""

import json
import sqlite3

import pytest
import yaml

from conftest import ROOT, run_cli

from skillos import config as cfgmod
from skillos.ledger.store import Ledger
from skillos.training.selector import credit as credit

CPU = ROOT / "training" / "configs" / "selector-cpu.yaml"


@pytest.fixture(scope="module")
def built(tmp_path_factory, game_cache):
    from transformers import AutoTokenizer

    from skillos.evals.envs.slate.slates import make_slate_setup
    from skillos.evals.arms import load_games
    from skillos.evals.backends.tiny_model import build

    cfg = cfgmod.load(CPU)
    games = load_games(cfg, "train", 2)
    setup = make_slate_setup(cfg, games, tmp_path_factory.mktemp("slate"))
    return setup, [g.id for g in games], AutoTokenizer.from_pretrained(build())


def _read_names(tokenizer, text):
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [r["name"] for r in credit.locate_reads(credit.token_bytes(tokenizer, ids))]


def test_bc_rows_clone_the_gold_first_read_on_the_training_prompt(built):
    from skillos.evals.envs.slate.slates import SLATE_INSTRUCTIONS, SYSTEM, SlateEnv, tool_schemas
    from skillos.training.selector.rows import bc_dataset

    setup, ids, tokenizer = built
    rows = bc_dataset(setup, ids, tokenizer)
    assert [r["game_id"] for r in rows] == ids
    for row in rows:
        oracle = setup.slates[row["game_id"]].oracle
        assert row["read"] == oracle and _read_names(tokenizer, row["completion"]) == [oracle]
        first = SlateEnv(setup).reset(game_id=row["game_id"])
        rollout_prompt = tokenizer.apply_chat_template(
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": SLATE_INSTRUCTIONS + "\n\n" + first}],
            tools=tool_schemas(), add_generation_prompt=True, tokenize=False)
        assert row["prompt"] == rollout_prompt  # what GRPO's rollout starts from


def test_dpo_pairs_prefer_the_oracle_over_each_misleading_skill(built):
    from skillos.training.selector.rows import dpo_pairs

    setup, ids, tokenizer = built
    rows = dpo_pairs(setup, ids, tokenizer)
    assert len(rows) == sum(len(setup.slates[i].misleading) for i in ids) == 6  # 3 misleading per slate
    for row in rows:
        slate = setup.slates[row["game_id"]]
        assert _read_names(tokenizer, row["chosen"]) == [slate.oracle]
        assert _read_names(tokenizer, row["rejected"]) == [row["rejected_read"]]
        assert slate.role(row["rejected_read"]) == "misleading"
    assert len({r["prompt"] for r in rows}) == len(ids)


def test_dpo_pairs_each_gold_read_with_at_most_five_misleading_ones(tmp_path, game_cache):
    from transformers import AutoTokenizer

    from skillos.evals.envs.slate.slates import make_slate_setup
    from skillos.evals.arms import load_games
    from skillos.training.selector.rows import DPO_REJECTED, dpo_pairs
    from skillos.evals.backends.tiny_model import build

    cfg = cfgmod.with_sets(cfgmod.load(CPU), ["skillgate.slate_size=10", "skillgate.n_misleading=7", "skillgate.n_irrelevant=2"])
    games = load_games(cfg, "train", 1)
    setup = make_slate_setup(cfg, games, tmp_path)
    slate = setup.slates[games[0].id]
    rows = dpo_pairs(setup, [games[0].id], AutoTokenizer.from_pretrained(build()))
    assert len(slate.misleading) == 7 and DPO_REJECTED == 5 and len(rows) == 5
    assert [r["rejected_read"] for r in rows] == [n for n in slate.order if n in slate.misleading][:5]


@pytest.mark.slow
@pytest.mark.parametrize("trainer", ["selector-bc", "selector-dpo"])
def test_one_baseline_step_on_cpu(tmp_path, game_cache, skillos_home, trainer):
    data = yaml.safe_load(CPU.read_text())
    data["skillgate"].update(trainer=trainer, selector_credit="off", slate_repo=str(CPU.parent / "slates/household"))
    data["training"].update(max_steps=1, output_dir=str(tmp_path / "out"))
    data["divergences"]["skillgate.trainer"] = {"value": trainer, "reason": "a SkillGate baseline arm"}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    result = run_cli("train", config, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout)
    assert len(summary["checkpoints"]) == 1 and summary["examples"] == (6 if trainer == "selector-bc" else 18)
    assert summary["train_loss"] == summary["train_loss"]  # a number, not NaN
    # the run is its experiment's whole launch: both are recorded finished (not left `planned`)
    ledger = Ledger(skillos_home / "ledger.db")
    run = ledger.run(summary["run_id"])
    assert run["status"] == "finished"
    assert ledger.corrected("experiments", ledger.row("experiments", run["experiment_id"]))["status"] == "finished"
    assert sqlite3.connect(skillos_home / "ledger.db").execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
