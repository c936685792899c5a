"""A miniature's payoff table (training/canary/payoff.py): a canary refuses to run when a constant
answer (one a trainer that ignored its input could learn) is not beaten detectably in some stratum,
and the curator's and selector's miniatures are ones where every constant answer loses, so a
task-blind policy judged by the canary's own rule does not pass."""

from collections import namedtuple

import pytest

from skillos.errors import SkillosError
from skillos.ledger.store import canary_passed
from skillos.training.canary import Measured, judged_result
from skillos.training.canary import payoff

HEAT, COOL = "pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep"


def strata(n: int) -> dict:
    return {f"{t}-{i}": t for t in (HEAT, COOL) for i in range(n)}


def test_a_constant_answer_as_good_as_reading_the_input_refuses_the_canary():
    tasks = strata(12)
    right = {t: True for t in tasks}
    table = payoff.table({"insert both": dict(right), "no skill": {t: False for t in tasks}}, right, tasks)
    assert not table["every_constant_loses"]
    assert table["margin"]["no skill"]["detectable"] and not table["margin"]["insert both"]["detectable"]
    with pytest.raises(SkillosError) as refused:
        payoff.require(table, "curator")
    assert "'insert both'" in str(refused.value) and "\n" not in str(refused.value)


def test_a_margin_the_n_cannot_detect_refuses_and_one_it_can_passes():
    small, large = strata(4), strata(12)
    for tasks, detectable in ((small, False), (large, True)):
        right = {t: True for t in tasks}
        heat_only = {t: s == HEAT for t, s in tasks.items()}  # loses every cool task
        table = payoff.table({"heat skill": heat_only}, right, tasks)
        assert table["every_constant_loses"] is detectable
        m = table["margin"]["heat skill"]
        assert (m["stratum"], m["b"], m["c"]) == (COOL, len(tasks) // 2, 0)
    assert any("NOT detectable" in line for line in payoff.lines(payoff.table({"heat skill": {
        t: s == HEAT for t, s in small.items()}}, {t: True for t in small}, small)))


def test_unmeasured_tasks_are_counted_not_scored():
    tasks = strata(10)
    right = {t: True for t in tasks}
    gappy = {t: (None if i % 5 == 0 else s == HEAT) for i, (t, s) in enumerate(tasks.items())}
    table = payoff.table({"heat skill": gappy}, right, tasks)
    row = table["success"]["heat skill"]
    assert row[HEAT]["unmeasured"] + row[COOL]["unmeasured"] == 4
    assert row[HEAT]["of"] + row[COOL]["of"] == 16


Game = namedtuple("Game", "id task_type task path")


@pytest.fixture
def slates(tmp_path):
    """The selector canary's slates for 20 heat and 20 cool games (no engine needed to build them)."""
    from skillos.config.loading import with_sets
    from skillos.training.selector import canary as selector

    cfg = with_sets(selector.CANARY.config(), ["env.seed=7"])
    games = [Game(f"{kind}-{i}", t, f"{kind} some egg and put it in countertop", "")
             for kind, t in (("heat", HEAT), ("cool", COOL)) for i in range(20)]
    return cfg, games, selector.payoff(cfg, games, tmp_path, echo=lambda _: None)


def test_no_naming_rule_a_listing_supports_picks_the_selector_oracle(slates):
    cfg, games, table = slates
    assert table["every_constant_loses"], table["margin"]
    rules = set(table["success"]) - {payoff.INPUT_DEPENDENT}
    assert {"no read", "the listed name at 1", "heat-then-place whenever listed"} <= rules
    # both oracles are on every slate: a name alone wins one stratum and loses the other outright
    heat_name = table["success"]["heat-then-place whenever listed"]
    assert (heat_name[HEAT]["won"], heat_name[COOL]["won"]) == (20, 0)
    assert all(r[HEAT]["won"] + r[COOL]["won"] <= 20 for name, r in table["success"].items()
               if name != payoff.INPUT_DEPENDENT)


def judged(before: dict, after: dict, tasks: dict) -> dict:
    """A canary's result as its own rule judges it: three seeds of the same before and after, each
    control flat (the controls are not what is tested here)."""
    measured = [Measured("m", before, after, dict(before), flipped_after=dict(before), seed=s, strata=tasks)
                for s in (0, 1, 2)]
    return judged_result(measured)


def test_a_task_blind_selector_does_not_pass_by_the_canary_rule_and_reading_the_input_does(tmp_path):
    from skillos.config.loading import with_sets
    from skillos.evals.envs.registry import environment
    from skillos.training.selector import canary as selector

    cfg = with_sets(selector.CANARY.config(), ["env.seed=11"])
    games = [Game(f"{kind}-{i}", t, f"{kind} some egg and put it in countertop", "")
             for kind, t in (("heat", HEAT), ("cool", COOL)) for i in range(20)]
    setup = environment("slate").make_slate_setup(cfg, games, tmp_path)
    tasks = {g.id: g.task_type for g in games}
    # before: an even warm start, the oracle on every other slate of each type
    before = {g.id: i % 2 == 0 for i, g in enumerate(games)}
    for name in ("heat-then-place", "cool-then-place"):
        blind = {g.id: setup.slates[g.id].oracle == name for g in games}
        assert not canary_passed(judged(before, blind, tasks)), name
    assert canary_passed(judged(before, {g.id: True for g in games}, tasks))


def test_a_trainer_that_learned_the_best_constant_answer_does_not_pass_however_low_its_start():
    """The rule's clause: the trained runs must beat the payoff table's best constant answer on
    the same tasks. A warm start below a constant answer lets a task-blind run improve on its
    start in every stratum (the curator's shuffled control did: 95 -> 112 of 216); judged against
    the constant it gains nothing. A run that reads its input beats it."""
    tasks = strata(20)
    index = {t: i for i, t in enumerate(sorted(tasks))}
    both = {t: index[t] % 4 != 0 for t in tasks}  # a constant answer: 15 of 20 in each stratum
    none = {t: index[t] % 4 == 0 for t in tasks}
    right = {t: True for t in tasks}
    table = payoff.table({"both": both, "no skill": none}, right, tasks)
    assert table["best_constant"]["answer"] == "both" and table["best_constant"]["won"] == 30
    assert any("the best constant answer over every stratum: both (30/40)" in line for line in payoff.lines(table))
    low = {t: index[t] % 10 == 0 for t in tasks}  # a warm start at 2 of 20 per stratum
    runs = [Measured("m", dict(low), dict(both), dict(low), flipped_after=dict(low), seed=s, strata=dict(tasks))
            for s in (0, 1, 2)]
    blind = {**judged_result(runs, None, table), "payoff": table}
    assert blind["rule"]["pooled_improvement"] and blind["rule"]["every_stratum_improves"]  # up on its start
    assert blind["rule"]["beats_best_constant"] is False and not canary_passed(blind)
    v = blind["versus_constant"]
    assert (v["answer"], v["n"], v["b"], v["c"]) == ("both", 120, 0, 0)
    reads = [Measured("m", dict(low), dict(right), dict(low), flipped_after=dict(low), seed=s, strata=dict(tasks))
             for s in (0, 1, 2)]
    read = {**judged_result(reads, None, table), "payoff": table}
    assert read["rule"]["beats_best_constant"] is True and canary_passed(read)
    assert (read["versus_constant"]["b"], read["versus_constant"]["c"]) == (30, 0)
    assert canary_passed({**read, "versus_constant": None}) is False  # a payoff table and no comparison: no pass


def skills(*pairs):
    from skillos.repo import Skill

    return [Skill(name, "what a curator turn wrote", text) for name, text in pairs]


# the stop-74 prior: each skill right for its type and misleading the other; its recombinations
# held a skill right for both types (measured), which is why the miniature now bounds its repo
MIXED = (("microwave-first", "Heat the X with the microwave. Cool the X with the sinkbasin, not the fridge. "
                             "Then put it in the Y.", 1, HEAT),
         ("fridge-first", "Cool the X with the fridge. Heat the X with the sinkbasin, not the microwave. "
                          "Then put it in the Y.", 1, COOL))


def test_the_curator_table_holds_skills_recombined_from_the_priors_own_sentences():
    """A sampled turn mixes the two skills' sentences (measured), and the reading executor takes from
    a skill each instruction its task's verb concerns: one skill of the right sentences is a constant
    answer right for both types, so the table must hold it (it did not, and it ties reading the input)."""
    from skillos.training.curator.canary import recombined, telling

    made = recombined(MIXED)
    told = {telling(skills(("s", text))) for text in made.values()}
    assert "cool: fridge; heat: microwave" in told  # right for both types, whatever the task
    assert all(text.endswith("Then put it in the Y.") for text in made.values())  # the step every skill shares
    assert all(text.count("Then put it in the Y.") == 1 for text in made.values())
    prior = {telling(skills((n, c))) for n, c, _, _ in MIXED}
    assert prior == {"cool: sinkbasin, not fridge; heat: microwave", "cool: fridge; heat: sinkbasin, not microwave"}
    assert not prior & told  # the prior skills are tabulated by their names, not again here
    assert len(made) == 3 * 3 - 2  # none or one of each verb's two sentences, less the two prior skills


def test_the_shipped_miniature_has_no_skill_right_for_both_types_within_its_repos_bound():
    """The shipped prior's skills each tell one procedure, and every recombination that tells both
    is past the miniature's bound (training.max_instructions 1), so the environment refuses it."""
    from skillos.evals.envs.registry import environment
    from skillos.repo import SkillRepo
    from skillos.training.curator.canary import CANARY, PRIOR, _refused, recombined, telling
    from skillos.training.curator.env import capacity

    cfg = CANARY.config()
    bound = capacity(cfg, environment(cfg))  # as the canary's rollouts are bounded
    assert bound.most == 1
    assert [telling(skills((n, c))) for n, c, _, _ in PRIOR] == ["heat: microwave", "clean: sinkbasin"]
    for text in recombined().values():
        repo = SkillRepo(None)
        repo.insert("s", "a skill", text)
        told = telling(repo.skills)
        assert (bound.over(repo) is not None) == (told == "clean: sinkbasin; heat: microwave"), told
    assert "clean: sinkbasin; heat: microwave" in {telling(skills(("s", t))) for t in recombined().values()}
    # the payoff table labels the rows the bound refuses: both skills in one call, not either alone
    (_, heat, _, _), (_, clean, _, _) = PRIOR
    assert _refused(bound, [heat, clean]) == "training.max_instructions 1" and _refused(bound, [heat]) is None


def test_recombined_skills_of_another_prior_keep_its_sentences_whole():
    from skillos.training.curator.canary import recombined

    prior = (("a", "Clean the X with the sinkbasin! Heat the X with the microwave", 1, "clean"),
             ("b", "Heat the X with the stoveburner. Clean the X with the bathtub, not the sinkbasin!", 1, "heat"))
    made = recombined(prior)
    assert "Clean the X with the sinkbasin! Heat the X with the stoveburner." in made.values()  # the prior's order
    assert all(text.strip() for text in made.values()) and len(made) == 3 * 3 - 2 - 1  # no empty skill
    assert recombined(prior[:1]) == {}  # one skill: nothing to recombine


def test_what_a_turn_tells_the_executor_is_read_from_its_content_in_retrieval_order():
    from skillos.training.curator.canary import telling

    (heat_name, heat_text, _, _), (cool_name, cool_text, _, _) = MIXED
    assert telling(skills((cool_name, heat_text))) == telling(skills((heat_name, heat_text)))  # the name says nothing
    assert telling(skills((cool_name, cool_text), (heat_name, heat_text))) == "cool: fridge; heat: sinkbasin, not microwave"
    assert telling(skills((heat_name, heat_text), (cool_name, cool_text))) == "cool: sinkbasin, not fridge; heat: microwave"
    assert telling([]) == "(nothing)"
    assert telling(skills(("x", "Then put it in the Y."))) == "(no instruction)"


def test_the_refusal_names_the_constant_answer_that_comes_closest_to_reading_the_input():
    tasks = strata(12)
    right = {t: True for t in tasks}
    nearly = {t: not (s == COOL and t.endswith("-0")) for t, s in tasks.items()}  # loses one cool task
    table = payoff.table({"a near miss": nearly, "as good": dict(right)}, right, tasks)
    with pytest.raises(SkillosError, match="'as good'"):
        payoff.require(table, "curator")


def test_recombined_groups_sentences_by_the_instruction_the_executor_reads():
    """Sentences that open with the same word but instruct different verbs are recombined as
    different instructions: the skill right for both types is built (it is the one that matters)."""
    from skillos.training.curator.canary import recombined, telling

    prior = (("a", "First, heat the X with the microwave. First, cool the X with the sinkbasin, not the fridge. "
                   "Then put it in the Y.", 1, "heat"),
             ("b", "First, cool the X with the fridge. First, heat the X with the sinkbasin, not the microwave. "
                   "Then put it in the Y", 1, "cool"))  # its last step without its end mark: the same sentence
    made = recombined(prior)
    assert "cool: fridge; heat: microwave" in {telling(skills(("s", t))) for t in made.values()}
    assert all(t.endswith("Then put it in the Y.") and t.count("Then put it") == 1 for t in made.values())
    assert len(made) == 3 * 3 - 2


def test_the_skills_a_turn_is_judged_by_are_those_the_next_play_retrieved_in_its_order():
    """`shown` reads what the position after the turn was given, in the executor's order (an earlier
    skill's word stands), not the order the turn inserted them in."""
    from types import SimpleNamespace

    from skillos.repo import SkillRepo
    from skillos.training.curator import canary
    from skillos.training.curator.env import CuratorEnv

    repo = SkillRepo(None)
    for name, content, _, _ in MIXED:  # microwave-first inserted first
        repo.insert(name, "a skill", content)
    env = CuratorEnv.__new__(CuratorEnv)
    env._state = SimpleNamespace(repo=repo, retrieved=[[], ["fridge-first", "microwave-first"]])
    assert [s.name for s in canary.shown(env)] == ["fridge-first", "microwave-first"]
    assert canary.telling(canary.shown(env)) == "cool: fridge; heat: sinkbasin, not microwave"
