"""The reasoning environment: the grader on a table of tricky answers, GPQA's shuffled options,
hub datasets from local files in their own layouts (and the one-line error when one is missing),
the generated problem sets, a solver whose success depends on what its skills say, and the
reasoning quickstart through the real CLI with its launch gates."""

import json

import pytest
import yaml

from conftest import ROOT, run_cli
from skillos.evals.envs.reasoning import datasets, generator
from skillos.evals.envs.reasoning.environment import REASONING, ReasoningEnv
from skillos.evals.envs.reasoning.grading import extract_choice, grade, last_boxed
from skillos.evals.envs.reasoning.heuristic import HeuristicReasoner, MethodRecord, cue, skill_name
from skillos.errors import SkillosError
from skillos.repo import Skill

QUICKSTART = ROOT / "evals" / "configs" / "reasoning-quickstart.yaml"

GRADES = [
    # math: the last \boxed{}, braces matched, compared by math-verify
    ("math", r"\frac{1}{2}", r"so the answer is \boxed{\frac{1}{2}}", True),  # nested braces
    ("math", r"\frac{1}{2}", r"\boxed{0.5}", True),
    ("math", r"\frac{1}{2}", r"\boxed{\dfrac{2}{4}}", True),
    ("math", r"\frac{\sqrt{3}}{2}", r"$\boxed{\frac{\sqrt{3}}{2}}$", True),
    ("math", r"2\sqrt{2}", r"\boxed{\sqrt{8}}", True),
    ("math", r"x^2+2x+1", r"\boxed{(x+1)^2}", True),
    # two boxes a separator apart are one answer, as math-verify joins them: {1/3, 1/2} is not 1/2
    ("math", r"\frac{1}{2}", r"first \boxed{\frac{1}{3}}, then finally \boxed{\frac{1}{2}}", False),
    ("math", r"\frac{1}{2}", r"\boxed{\frac{1}{2}} hmm, no: \boxed{\frac{1}{3}}", False),
    ("math", r"-\frac{7}{3}", r"\boxed{-\frac{7}{3}}", True),
    ("math", r"-\frac{7}{3}", r"\boxed{\frac{7}{3}}", False),
    ("math", "3", "The answer is 3.", False),  # nothing boxed: unextractable, wrong
    # integer (AIME): one integer 0-999
    ("integer", "204", r"\boxed{204}", True),
    ("integer", "33", r"\boxed{033}", True),
    ("integer", "25", r"\boxed{25^\circ}", True),
    ("integer", "204", r"\boxed{205}", False),
    ("integer", "7", r"\boxed{}", False),
    ("integer", "7", "the answer is 7", False),
    ("integer", "80", r"\boxed{\frac{160}{2}}", False),  # not an integer answer
    # choice (GPQA): the last explicit statement, never a stray article
    ("choice", "B", "The answer is (B).", True),
    ("choice", "B", "A careful look at the spectrum settles it. The answer is (B)", True),
    ("choice", "A", "A reasonable guess is that the reaction is exothermic.", False),
    ("choice", "A", "The answer is a mixture of both isomers.", False),
    ("choice", "A", "The answer is A mixture of both isomers.", False),
    ("choice", "C", r"\boxed{C}", True),
    ("choice", "C", r"\boxed{\text{(C)}}", True),
    ("choice", "D", "At first the answer is (A), but rechecking, the answer is (D).", True),
    ("choice", "B", "Answer: B", True),
    ("choice", "B", "**Answer: B**", True),
]


@pytest.mark.parametrize("grading, reference, response, correct", GRADES)
def test_the_grader_on_tricky_answers(grading, reference, response, correct):
    assert grade(grading, reference, response).correct is correct


def test_unextractable_answers_say_so():
    assert last_boxed(r"\boxed{\frac{1}{\sqrt{2}}} end") == r"\frac{1}{\sqrt{2}}"
    assert extract_choice("A cat sat. A dog ran.") is None
    assert grade("math", "1", "no box at all").extracted is None


def gpqa_row():
    return {"Question": "Which particle mediates the electromagnetic force?", "Correct Answer": "the photon",
            "Incorrect Answer 1": "the gluon", "Incorrect Answer 2": "the W boson",
            "Incorrect Answer 3": "the graviton", "Record ID": "rec42", "Subdomain": "Physics"}


def test_a_gpqa_row_grades_the_same_answer_the_same_way_under_every_seed():
    orders = set()
    for seed in range(12):
        p = datasets.from_choice_row(gpqa_row(), "gpqa_diamond", {}, 0, seed)
        orders.add(p.options)
        assert p.choice_seed == seed and sorted(p.options) == sorted(gpqa_row()[k] for k in (
            "Correct Answer", "Incorrect Answer 1", "Incorrect Answer 2", "Incorrect Answer 3"))
        letter_of = {text: "ABCD"[i] for i, text in enumerate(p.options)}
        assert f"({letter_of['the photon']}) the photon" in p.task
        assert grade("choice", p.answer, f"The answer is ({letter_of['the photon']}).").correct
        for wrong in ("the gluon", "the W boson", "the graviton"):
            assert not grade("choice", p.answer, f"The answer is ({letter_of[wrong]}).").correct
        # the same row, the same problem: the hash does not depend on the shuffle
        assert p.content_hash == datasets.from_choice_row(gpqa_row(), "gpqa_diamond", {}, 0, 0).content_hash
    assert len(orders) > 1  # the seed does shuffle


def write_hub_files(root):
    import pyarrow as pa
    import pyarrow.parquet as pq

    aime24 = root / "Maxwell-Jia" / "AIME_2024"
    aime24.mkdir(parents=True)
    (aime24 / "aime_2024_problems.jsonl").write_text("\n".join(json.dumps(
        {"ID": f"2024-I-{i}", "Problem": f"Find {i} + {i}.", "Solution": "...", "Answer": 2 * i})
        for i in range(1, 4)) + "\n")
    aime25 = root / "MathArena" / "aime_2025" / "data"
    aime25.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"problem_idx": i, "problem": f"Find {i} * 3.", "answer": str(3 * i)}
                                         for i in range(1, 3)]), aime25 / "train-00000-of-00001.parquet")
    gpqa = root / "Idavidrein" / "gpqa"
    gpqa.mkdir(parents=True)
    import csv

    with open(gpqa / "gpqa_diamond.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(gpqa_row()))
        writer.writeheader()
        writer.writerow(gpqa_row())
    (gpqa / "gpqa_main.csv").write_text("Question\nnot the diamond set\n")
    deepmath = root / "zwhe99" / "DeepMath-103K" / "data"
    deepmath.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{"question": f"Evaluate {i}/4.", "final_answer": f"\\frac{{{i}}}{{4}}",
                                          "difficulty": 3.0, "topic": "Algebra", "r1_solution_1": "..."}
                                         for i in range(1, 6)]), deepmath / "train-00000-of-00010.parquet")


def test_hub_datasets_read_from_local_files_in_their_own_layouts(tmp_path):
    write_hub_files(tmp_path)
    aime24 = datasets.load_hub("aime24", tmp_path, 3, 0, 0)
    assert [p.answer for p in aime24] == ["2", "4", "6"] and aime24[0].grading == "integer"
    assert aime24[0].id == "aime24-2024-I-1"
    aime25 = datasets.load_hub("aime25", tmp_path, 2, 0, 0)
    assert aime25[1].task == "Find 2 * 3." and aime25[1].answer == "6"
    gpqa = datasets.load_hub("gpqa_diamond", tmp_path, 1, seed=0, choice_seed=3)  # gpqa_main.csv is not read
    assert gpqa[0].grading == "choice" and gpqa[0].choice_seed == 3 and gpqa[0].task_type == "Physics"
    deepmath = datasets.load_hub("deepmath", tmp_path, 5, seed=1, choice_seed=0)
    assert {p.answer for p in deepmath} == {f"\\frac{{{i}}}{{4}}" for i in range(1, 6)}
    assert deepmath[0].task_type == "Algebra"
    env = ReasoningEnv(deepmath)
    env.load(deepmath[0].id)
    env.reset()
    assert env.step(rf"so \boxed{{{deepmath[0].answer}}}").won
    with pytest.raises(SkillosError, match="aime25: 2 problems .* asked for 5"):
        datasets.load_hub("aime25", tmp_path, 5, 0, 0)


def test_a_missing_dataset_is_a_one_line_error_naming_it_where_and_how_to_fetch(tmp_path):
    data = yaml.safe_load(QUICKSTART.read_text())
    data["env"]["reasoning"] = {"datasets": {"train": "generated", "valid_unseen": "aime24"}, "data_dir": "hub"}
    data["env"]["n_games"] = 30
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(data))
    result = run_cli("eval", config, "--out", tmp_path / "out")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert "dataset aime24 (Maxwell-Jia/AIME_2024)" in line and str(tmp_path / "hub" / "Maxwell-Jia" / "AIME_2024") in line
    assert "huggingface-cli download Maxwell-Jia/AIME_2024 --repo-type dataset" in line
    assert not (tmp_path / "out").exists()


def test_an_unknown_dataset_name_is_a_config_error(tmp_path):
    data = yaml.safe_load(QUICKSTART.read_text())
    data["env"]["reasoning"] = {"datasets": {"valid_unseen": "aime2024"}}
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(data))
    result = run_cli("eval", config)
    assert result.returncode == 2
    assert "env.reasoning.datasets.valid_unseen: 'aime2024' is not one of generated, aime24" in result.stderr


def test_generated_problems_are_seeded_and_split_by_hash():
    train = generator.generate("train", 40, 0, None, 0)
    held = generator.generate("valid_unseen", 24, 0, None, 0)
    assert [p.id for p in generator.generate("valid_unseen", 10, 0, None, 0)] == [p.id for p in held[:10]]
    assert [p.id for p in generator.generate("valid_unseen", 10, 1, None, 0)] != [p.id for p in held[:10]]
    assert not {p.content_hash for p in train} & {p.content_hash for p in held}
    assert all(int(p.content_hash[:8], 16) % 10 in (8, 9) for p in held)
    assert {p.task_type for p in held} == set(generator.FAMILIES)
    assert {p.grading for p in held} == {"integer", "math", "choice"}
    env = ReasoningEnv(held)
    for p in held:  # every reference answer grades as correct when it is the boxed answer
        env.load(p.id)
        env.reset()
        reply = f"The answer is ({p.answer})." if p.grading == "choice" else rf"\boxed{{{p.answer}}}"
        assert env.step(reply).won, (p.task, p.answer)


def test_the_solver_follows_what_its_skills_say():
    problem = next(p for p in generator.generate("valid_unseen", 8, 0, None, 0) if p.task_type == "remainder-of-power")
    env = ReasoningEnv([problem])

    def solve(skills):
        env.load(problem.id)
        obs = env.reset()
        reply = HeuristicReasoner().new_episode(problem.task, skills).act(obs.text, obs.admissible)
        return reply, env.step(reply).won

    def skill(counts):
        record = MethodRecord(cue(problem.task), counts)
        return Skill(skill_name(record.cue), *record.render())

    reply, won = solve([skill({"power-then-remainder": [2, 0]})])
    assert won and "Method: power-then-remainder." in reply
    reply, won = solve([skill({"product-then-remainder": [3, 0]})])  # a skill that is wrong
    assert not won and "Method: product-then-remainder." in reply
    other = Skill("problems-like-something-else", *MethodRecord("how many positive divisors does",
                                                                {"power-then-remainder": [5, 0]}).render())
    assert solve([other])[0] == solve([])[0]  # a skill for another kind of problem changes nothing


def test_the_reasoning_quickstart_shows_a_measured_effect_with_its_statistics(tmp_path):
    gates = run_cli("gate", "check", QUICKSTART, "--dry-run", "--json")
    assert gates.returncode == 0, gates.stderr[-2000:]
    checks = json.loads(gates.stdout)
    assert not [c for c in checks["results"] if c["status"] == "FAIL"]
    assert {c["check"]: c["status"] for c in checks["results"]}["rollout-positions"] == "PASS"
    result = run_cli("eval", QUICKSTART, "--n-games", 24, "--n-train-games", 24, "--json", "--out", tmp_path / "r")
    assert result.returncode == 0, result.stderr[-2000:]
    report = json.loads(result.stdout)
    arms = report["arms"]
    assert arms["no_memory"]["attempted"] == arms["closed_loop"]["attempted"] == 24
    assert arms["closed_loop"]["final_repo_size"] > 0 and arms["no_memory"]["final_repo_size"] == 0
    comp = report["comparisons"][0]
    assert comp["n_paired"] == 24 and comp["n_dropped"] == 0
    assert comp["treatment_rate"] > comp["control_rate"] and comp["ci_low"] > 0 and comp["p_value"] < 0.05
    assert comp["mde"] is not None and comp["b"] > comp["c"]
    assert report["env"]["name"] == "reasoning" and report["env"]["held_out_from"] == "generated problems (valid_unseen)"
    rows = [json.loads(line) for line in (tmp_path / "r" / "games.jsonl").read_text().splitlines()]
    assert all(r["steps"] == 1 and r["coerced_actions"] == 0 for r in rows)


def test_a_failed_executor_call_is_unmeasured_not_wrong():
    from skillos.evals.runner import run_arm

    class Down:
        name = "down"

        def new_episode(self, task, skills):
            return self

        def act(self, observation, admissible):
            raise ConnectionError("HTTP 503")

    problems = generator.generate("valid_unseen", 2, 0, None, 0)
    rows = run_arm("x", problems, env=REASONING.make_env(problems), executor=Down(), repo=None, max_steps=1,
                   retrieval_mode="bm25", top_k=5, concurrency=1, wave_size=1)
    assert [r["success"] for r in rows] == [None, None] and all(r["unmeasured"] for r in rows)


def test_curator_training_on_reasoning_draws_each_group_size_from_the_range():
    from skillos import config
    from skillos.evals.arms import load_games
    from skillos.training.curator.env import CuratorEnv, finish, make_setup
    from skillos.training.curator.reward import reward
    from skillos.training.curator.trainer import dataset_rows

    cfg = config.load(ROOT / "training" / "configs" / "cpu-smoke-reasoning.yaml")
    games = load_games(cfg, "train", cfg.env.n_train_games)
    rows = dataset_rows(cfg, games)
    assert {len(r["game_ids"]) for r in rows} == {2, 3}  # min_group_size 2 .. group_size 3
    assert rows[0]["prompt"][0]["content"] == REASONING.curator_system
    assert all(len({games_by_id.task_type for games_by_id in games if games_by_id.id in r["game_ids"]}) == 1
               for r in rows)  # one family per group
    setup = make_setup(cfg, games)
    for row in rows[:4]:
        size = len(row["game_ids"])
        env = CuratorEnv(setup)
        first = env.reset(**{k: v for k, v in row.items() if k != "prompt"})
        assert f"Task 1 of {size}:" in first and "Result:" in first
        after = env.curate_and_advance([{"op": "insert", "skill_name": "check-your-work",
                                         "content": "Check your work.\nSubstitute the answer back."}])
        assert "- insert check-your-work: ok" in after and f"Task 2 of {size}:" in after
        rollout = finish(env)
        assert len(rollout.positions) == size and None not in rollout.positions
        w = cfg.reward
        assert reward(rollout, size, w.lambda_fc, w.lambda_cnt, w.lambda_comp).denominator == size - 1
    with pytest.raises(ValueError, match="training.group_size is 2-3"):
        CuratorEnv(setup).reset(game_ids=[g.id for g in games[:4]])


def test_the_paper_reasoning_config_passes_its_own_reference_table(canaries_passed):
    result = run_cli("gate", "check", ROOT / "training" / "configs" / "skillos-paper-reasoning.yaml", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    checks = {c["check"]: c for c in json.loads(result.stdout)["results"]}
    assert checks["reference"]["seen"] == "skillos-paper-reasoning/reasoning"
    for key in ("training.group_size", "env.reasoning.min_group_size", "training.max_steps",
                "executor.temperature", "executor.top_p", "executor.top_k"):
        assert checks[f"table.{key}"]["status"] == "PASS", checks[f"table.{key}"]
    # one turn per problem is how the environment plays, not a setting: no row to approve
    assert "table.env.max_steps" not in checks
    assert checks["completion-length"]["status"] == "PASS"  # 12 x 4096


def test_the_llm_solver_answers_in_one_turn_with_its_skills_over_real_http(monkeypatch):
    """The reasoning prompt (skills, the problem, \\boxed{}) through the real openai SDK against
    the local server; a boxed reply is graded, an outage is unmeasured."""
    from llm_server import ScriptedLLM
    from skillos.config import BackendConfig
    from skillos.evals.runner import run_arm
    from skillos.repo import SkillRepo

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    problems = [p for p in generator.generate("valid_unseen", 16, 0, None, 0) if p.grading != "choice"][:3]
    answers = {p.task: p.answer for p in problems}

    def reply(messages):
        user = messages[-1]["content"]
        problem = user.split("Problem:\n", 1)[1].split("\n\n", 1)[0]
        return f"Let me think step by step. ... so the final answer is \\boxed{{{answers[problem]}}}."

    with ScriptedLLM(reply) as server:
        config = BackendConfig(backend="openai", model="Qwen3-8B", base_url=server.openai_url,
                               max_retries=0, timeout_s=2.0)
        repo = SkillRepo(None)
        repo.insert("check-your-work", "Substitute the answer back before boxing it.", "Check it.")
        env = REASONING.make_env(problems)
        rows = run_arm("llm", problems, env=env, executor=REASONING.make_executor(config), repo=repo,
                       max_steps=1, top_k=5, retrieval_mode="bm25", concurrency=1, wave_size=1)
        assert [r["success"] for r in rows] == [True, True, True] and all(r["steps"] == 1 for r in rows)
        prompt = server.calls[0]["body"]["messages"][-1]["content"]
        assert "Past relevant skills:" in prompt and "check-your-work" in prompt and "\\boxed{}" in prompt
        server.failures.extend([503] * 3)
        rows = run_arm("llm", problems[:1], env=env, executor=REASONING.make_executor(config), repo=None,
                       max_steps=1, retrieval_mode="bm25", top_k=5, concurrency=1, wave_size=1)
        assert rows[0]["success"] is None and rows[0]["unmeasured"]


def test_the_schema_names_the_reasoning_datasets_and_families_the_env_has():
    from skillos.config import REASONING_DATASETS, REASONING_FAMILIES
    from skillos.evals.envs.reasoning.datasets import DATASETS
    from skillos.evals.envs.reasoning.generator import FAMILIES

    assert REASONING_DATASETS == DATASETS and REASONING_FAMILIES == tuple(FAMILIES)
