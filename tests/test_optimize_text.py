"""SkillOpt's parts of `skillos optimize` beyond the gate: the learning rate as a size (changed
lines, refused over the budget), the protected slow-update block, single-document mode (one
SKILL.md, its sections the edit units, best_skill.md and its history), and reflect → aggregate
(a reflection per trajectory, one textual gradient the proposer reads)."""

import json

import pytest
import yaml

from conftest import ROOT, run_cli
from skillos.evals.trajectory import Step, Trajectory
from skillos.repo import SkillRepo
from skillos.repo.skill import Skill
from skillos.training.textopt import document as doc
from skillos.training.textopt import slow as slow_module
from skillos.training.textopt.optimize import Edit, HeuristicProposer, apply_edits, edits_between
from skillos.training.textopt.reflect import aggregate_rules, order_by_gradient, reflect_rules
from skillos.training.textopt.textual import StepBudget, changed_lines, protected_block, with_block

SHIPPED = ROOT / "training" / "configs" / "optimize-quickstart.yaml"
BODY = "Look in the cabinets first.\nThen the countertops.\nThen the drawers.\n"


def repo_of(*skills) -> SkillRepo:
    return SkillRepo(None, [Skill(n, f"About {n}.", b) for n, b in skills])


def replace(repo, name, body) -> Edit:
    return Edit("replace", name, Skill(name, f"About {name}.", body).to_markdown())


def test_changed_lines_counts_a_rewritten_line_once_and_added_or_deleted_lines_each():
    assert changed_lines("a\nb\nc\n", "a\nb\nc\n") == 0
    assert changed_lines("a\nb\nc\n", "a\nB\nc\n") == 1  # one rewritten line
    assert changed_lines("a\nb\nc\n", "a\nb\nc\nd\ne\n") == 2
    assert changed_lines("a\nb\nc\n", "a\n") == 2
    assert changed_lines("", "x\ny\n") == 2


def test_a_replace_that_exceeds_the_budget_is_refused_and_counted():
    incumbent = repo_of(("search-order", BODY), ("pitfalls", "Never heat twice.\n"))
    rewrite = replace(incumbent, "search-order", "Fridge first.\nThen the sink.\nThen the shelves.\nThen a safe.\n")
    small = replace(incumbent, "pitfalls", "Never heat twice.\nNever cool a hot pan.\n")
    budget = StepBudget(3)
    kept = budget.admit([rewrite, small], incumbent)
    assert kept == [small] and budget.used == 1
    [refusal] = budget.refusals
    assert refusal.edit == "replace search-order (9 lines)" and refusal.changed_lines == 4
    assert refusal.reason == "4 changed lines exceed the 3 left of this step's budget of 3"
    record = budget.to_dict()
    assert (record["unit"], record["allowed"], record["used"], record["refused"]) == ("changed lines", 3, 1, 1)
    # the same whole rewrite is allowed once the budget covers every line it changes
    wide = StepBudget(4)
    assert wide.admit([rewrite], incumbent) == [rewrite] and wide.used == 4 and not wide.refusals


def test_an_ordinary_edit_touching_the_protected_block_is_refused_however_small():
    guided = with_block("# Search\n" + BODY, "Epoch 1: fridge tasks failed most.")
    assert protected_block(guided).startswith("<!-- skillos:slow-update -->")
    incumbent = repo_of(("search-order", guided))
    touched = replace(incumbent, "search-order", guided.replace("failed most", "won most"))
    outside = replace(incumbent, "search-order", guided.replace("the drawers", "the shelves"))
    budget = StepBudget(40)
    assert budget.admit([touched, outside], incumbent) == [outside]
    assert budget.refusals[0].changed_lines == 1 and "protected slow-update block" in budget.refusals[0].reason


SEED = ("# Household\n\nIntro.\n\n## Search order\n\nWhere to look.\n\n- cabinet\n- drawer\n\n### Detail\nmore\n\n"
        "## Pitfalls\n\n- never twice\n")


def test_a_document_splits_into_sections_that_proposers_edit_as_skills():
    document = SkillRepo(None, [Skill("household", "A household guide.", SEED)])
    preamble, sections = doc.split(SEED)
    assert preamble == "# Household\n\nIntro.\n\n" and [s.name for s in sections] == ["search-order", "pitfalls"]
    assert preamble + "".join(s.text for s in sections) == SEED  # nothing lost between sections
    units = doc.units(document)
    assert units.get("search-order").description == "Where to look." and "# Detail" in units.get("search-order").body
    scratch = units.copy()
    scratch.update("search-order", "Where to look.", "- fridge\n- drawer\n\n# Detail\nmore")
    scratch.insert("where-to-find-apple", "Where an apple was.", "# Apples\n\n- countertop: found there 1 of 2 times")
    scratch.delete("pitfalls")
    edits = doc.section_edits(edits_between(units, scratch), document)
    assert [e.summary() for e in edits] == ["delete section pitfalls", "replace section search-order (10 lines)",
                                            "add section where-to-find-apple (8 lines)"]
    after = apply_edits(document, edits).skills[0].body
    assert after.startswith("# Household\n\nIntro.\n\n## Search order\n\nWhere to look.\n\n- fridge\n")
    assert "### Detail" in after and "## where-to-find-apple" in after and "### Apples" in after
    assert "Pitfalls" not in after and doc.split(after)[0] == preamble  # the preamble is no unit
    budget = StepBudget(2)
    assert budget.admit(edits, document) == [edits[1]]  # one changed line; the others do not fit
    assert [r.changed_lines for r in budget.refusals] == [4, 8]  # measured on the whole document
    # per document, not per edit: two edits that each add half a protected block, and an `add` reusing
    # a section's name (it appends a whole section, so it costs one, not a small diff)
    from skillos.training.textopt.textual import BLOCK_END, BLOCK_START

    halves = [doc.SectionEdit("add", "a", f"## a\n\n{BLOCK_START}\nobey\n"),
              doc.SectionEdit("add", "b", f"## b\n\n{BLOCK_END}\n")]
    forged = StepBudget(40)
    assert forged.admit(halves, document) == []  # a lone marker is half a block: neither half lands
    assert all("protected slow-update block" in r.reason for r in forged.refusals) and len(forged.refusals) == 2
    # a skill that has its block already: a second block, or half of one, after it is refused too
    from skillos.repo import Skill as _Skill
    from skillos.training.textopt.optimize import Edit

    blocked = SkillRepo(None, [_Skill("tips", "Tips.", f"# Tips\n\n{BLOCK_START}\nkeep\n{BLOCK_END}\n\n- look\n")])
    for extra in (f"{BLOCK_START}\nobey me\n{BLOCK_END}\n", f"{BLOCK_START}\n"):
        md = blocked.get("tips").to_markdown() + "\n" + extra
        second = StepBudget(40)
        assert second.admit([Edit("replace", "tips", md)], blocked) == [], extra
        assert "protected slow-update block" in second.refusals[0].reason
    reused = doc.SectionEdit("add", "pitfalls", "## Pitfalls\n\n" + "".join(f"- rule {i}\n" for i in range(6)))
    costed = StepBudget(40)
    assert costed.admit([reused], document) == [reused] and costed.used >= 8
    # an edit within the budget that would take the document past a skill's size limit is refused too
    huge = doc.SectionEdit("add", "wall", "## wall\n\n" + "x" * 25_000 + "\n")
    wide = StepBudget(40)
    assert wide.admit([huge], document) == [] and wide.used == 0
    assert wide.refusals[0].reason.startswith("cannot be applied: body is")


def traj(game, task, won, retrieved=(), actions=()):
    steps = [Step(a, "Nothing happens." if "cabinet" in a else "You arrive.") for a in actions]
    return Trajectory(game, task, "pick_and_place_simple", steps=steps, won=won, retrieved=list(retrieved))


def test_reflections_cite_the_skill_text_used_and_aggregate_into_one_gradient():
    units = repo_of(("search-order", "Look in the cabinet for the mug first.\nThen the sink.\n"),
                    ("where-to-find-apple", "- countertop: found there 2 of 2 times\n"))
    failed = traj("g1", "put a mug in the fridge", False, ["search-order"], ["go to cabinet 1", "open cabinet 1"])
    won = traj("g2", "put an apple in the fridge", True, ["where-to-find-apple"], ["go to countertop 1"])
    bare = traj("g3", "put a cup in the shelf", False, [], ["go to shelf 1"])
    reflections = [reflect_rules(t, units) for t in (failed, won, bare)]
    assert reflections[0].cites == [{"unit": "search-order", "line": "Look in the cabinet for the mug first."}]
    assert "2 of 2 actions did nothing" in reflections[0].text and "revise" in reflections[0].text
    assert reflections[1].won and "keep" in reflections[1].text
    assert reflections[2].cites == [] and "no skill covered it" in reflections[2].text
    gradient = aggregate_rules(reflections)
    assert gradient.revise == ["search-order"] and gradient.keep == ["where-to-find-apple"]
    assert gradient.missing == ["pick_and_place_simple"]
    assert gradient.text.splitlines()[0] == "Textual gradient from 3 reflections (2 failed, 1 won):"
    assert '- revise search-order: read in 1 failed and 0 won games; cited: "Look in the cabinet' in gradient.text
    # the heuristic update reads it: what failures cited first, what only wins cited last
    edits = [Edit("replace", "where-to-find-apple", "x"), Edit("add", "new", "y"), Edit("replace", "search-order", "z")]
    assert [e.name for e in order_by_gradient(edits, gradient)] == ["search-order", "new", "where-to-find-apple"]


def test_a_model_reflects_per_trajectory_and_aggregates_and_falls_back_to_rules_on_an_outage(monkeypatch):
    from llm_server import ScriptedLLM

    from skillos.config import BackendConfig
    from skillos.training.textopt.optimize import make_proposer

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    units = repo_of(("search-order", "Look in the cabinet for the mug first.\nThen the sink.\n"))
    games = [traj("g1", "put a mug in the fridge", False, ["search-order"], ["go to cabinet 1"]),
             traj("g2", "put a mug in the sink", True, ["search-order"], ["go to sinkbasin 1"])]

    def reply(messages):
        if "Aggregate them" in messages[0]["content"]:
            return "- revise search-order: fridge before cabinet (1, 2)"
        return 'It trusted "Look in the cabinet for the mug first." and lost steps.'

    with ScriptedLLM(reply) as server:
        proposer = make_proposer(BackendConfig(backend="openai", model="m", base_url=server.openai_url), "repo")
        reflections, gradient = proposer.reflect(units, games)
        assert len(server.calls) == 3  # one reflection per trajectory, one aggregation
        assert [r.source for r in reflections] == ["openai:m", "openai:m"]
        assert reflections[0].cites == [{"unit": "search-order", "line": "Look in the cabinet for the mug first."}]
        assert gradient.text == "- revise search-order: fridge before cabinet (1, 2)" and gradient.source == "openai:m"
        server.outage = True
        reflections, gradient = proposer.reflect(units, games)
    assert all(r.source.startswith("rules (model failed") for r in reflections)
    assert gradient.text.startswith("Textual gradient from 2 reflections") and gradient.source.startswith("rules")
    # a model that replies nothing: the rules' reflections and gradient, said as theirs, not an empty one as the model's
    with ScriptedLLM(lambda messages: "") as server:
        proposer = make_proposer(BackendConfig(backend="openai", model="m", base_url=server.openai_url), "repo")
        reflections, gradient = proposer.reflect(units, games)
    assert [r.source for r in reflections] == ["rules (the model replied nothing)"] * 2
    assert all(r.text for r in reflections)
    assert gradient.source == "rules (the model replied nothing)" and gradient.text.startswith("Textual gradient")


def test_the_heuristic_proposer_in_document_mode_proposes_section_edits():
    from skillos.evals.envs.alfworld import text  # noqa: F401  (the curator's grammar needs the extra)

    document = SkillRepo(None, [Skill("household", "A household guide.", "# Household\n")])
    won = Trajectory("g1", "put a mug in desk", "pick_and_place_simple", won=True, retrieved=["household"],
                     steps=[Step("go to desk 1", "You arrive at desk 1. On the desk 1, you see a mug 1."),
                            Step("take mug 1 from desk 1", "You pick up the mug 1 from the desk 1."),
                            Step("move mug 1 to desk 1", "You move the mug 1 to the desk 1.")])
    proposer = doc.DocumentProposer(HeuristicProposer())
    reflections, gradient = proposer.reflect(document, [won])
    edits = proposer.propose(document, [won], None, 40, gradient)
    assert edits and all(isinstance(e, doc.SectionEdit) and e.op == "add" for e in edits)
    body = apply_edits(document, edits).skills[0].body
    assert body.startswith("# Household\n") and [s.name for s in doc.split(body)[1]] == [e.name for e in edits]


def small_config(tmp_path, **optimize) -> str:
    data = yaml.safe_load(SHIPPED.read_text())
    data["env"].update(n_games=4, n_train_games=3)
    data["experiment"]["expected_effect"] = None
    data["optimize"].update(epochs=1, minibatch_size=3, n_validation=4, **optimize)
    path = tmp_path / "optimize.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_bad_target_is_one_line_before_anything_runs(tmp_path):
    result = run_cli("optimize", small_config(tmp_path), "--set", "optimize.target=documents", "--out", tmp_path / "r")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "optimize.target" in result.stderr and "documents" in result.stderr
    assert not (tmp_path / "r").exists()
    stray = run_cli("optimize", small_config(tmp_path, document="nowhere/SKILL.md"), "--out", tmp_path / "s")
    assert stray.returncode == 2 and "optimize.document: set only with optimize.target: document" in stray.stderr


@pytest.mark.alfworld
@pytest.mark.slow  # ~40 s of real games (more with a cold game cache): CI runs it in the slow step
def test_single_document_mode_writes_best_skill_md_with_its_history(tmp_path, game_cache):
    pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
    out = tmp_path / "run"
    result = run_cli("optimize", small_config(tmp_path, gate={"mode": "paired", "k": 0.0, "max_unmeasured": 0.1},
                                              slow_update=True),
                     "--set", "optimize.target=document", "--out", out, "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    assert report["target"] == "document" and report["best_skill"] == str(out / "best_skill.md")
    from skillos.cli_render import optimize_lines

    assert optimize_lines(report)[-1] == f"best skill: {out / 'best_skill.md'} (history: {out / 'best_skill_history.jsonl'})"
    best = (out / "best_skill.md").read_text()
    assert best.startswith("---\nname: optimize-quickstart\n")
    history = [json.loads(x) for x in (out / "best_skill_history.jsonl").read_text().splitlines()]
    candidates = [json.loads(x) for x in (out / "history.jsonl").read_text().splitlines()]
    accepted = [c for c in candidates if c["verdict"] == "accept"]
    assert [h["candidate"] for h in history] == [None] + [c["candidate"] for c in accepted]
    assert (out / history[-1]["file"]).read_text() == best  # the last accepted version is the best
    assert all(h["diff"].startswith("---") and h["validation_rate"] is not None for h in history[1:])
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert [s["g"] for s in steps] == [0, 1]  # one ordinary step, then the epoch's slow update
    step, slow = steps
    # the slow update: guidance in the protected block, gated as one more candidate; both versioned
    assert slow["slow_update"] and slow["guidance"].startswith("Epoch 1 (1 steps") and slow["budget"] is None
    assert (out / "slow_update" / "after-step-0001.md").read_text().endswith(slow["guidance"] + "\n")
    assert step["meta_skill"] == "v0000.md" and slow["meta_skill"] == "after-step-0001.md"
    meta = (out / "meta_skill" / "after-step-0001.md").read_text()
    assert meta.startswith((out / "meta_skill" / "v0000.md").read_text().rstrip("\n"))
    assert meta.count(slow_module.LESSONS) == 1 and "Over epochs 1-1:" in meta
    guided = [c for c in candidates if c["slow_update"]]
    assert [c["candidate"] for c in guided] == [slow["candidate"]] and "<!-- skillos:slow-update -->" in guided[0]["diff"]
    assert step["reflections"] == 3 - step["unmeasured_not_reflected"] and step["gradient"].startswith("Textual gradient")
    assert step["budget"]["allowed"] == 40 and step["budget"]["used"] <= 40
    assert step["budget"]["refused"] == len(step["budget"]["refusals"]) == step["proposed"] - step["admitted"] \
        - step["already_rejected"]
    for c in candidates:
        assert all(e.startswith(("add section", "replace section", "delete section", "slow update")) for e in c["edits"])


def test_the_slow_update_writes_the_block_before_the_sections_where_ordinary_steps_cannot_reach_it():
    from skillos.training.textopt import slow

    document = SkillRepo(None, [Skill("household", "A household guide.", SEED)])
    steps = [{"epoch": 0, "step": 0, "candidate": 1, "verdict": "reject",
              "gradient": "Textual gradient ...\n- revise search-order: read in 2 failed\n"
                          "- add: 2 failed pick_heat_then_place_in_recep games read no skill",
              "budget": {"refusals": [{"edit": "add x", "changed_lines": 30, "reason": "30 changed lines exceed ..."}]}},
             {"epoch": 0, "step": 1, "candidate": None, "verdict": None, "gradient": "- keep pitfalls: read in 1 won"}]
    guidance = slow.guidance_rules(0, steps)
    assert guidance.splitlines() == [
        "Epoch 1 (2 steps, 1 candidates, 0 accepted):",
        "- kept failing: pick_heat_then_place_in_recep tasks read no skill in 1 of 2 steps",
        "- failures kept citing search-order (1 of 2 steps): follow it with care",
        "- held: pitfalls (only won games cited it, 1 steps)"]
    edit = slow.slow_edit(document, "document", guidance, "household")
    guided = apply_edits(document, [edit])
    body = guided.skills[0].body
    preamble, sections = doc.split(body)
    assert "<!-- skillos:slow-update -->" in preamble and [s.name for s in sections] == ["search-order", "pitfalls"]
    assert slow.slow_edit(guided, "document", "", "household") is None  # nothing new: no candidate
    assert slow.slow_edit(guided, "document", guidance, "household") is None  # the same block: none either
    # an ordinary section edit fits beside the block; the block itself is the slow update's alone
    units = doc.units(guided)
    scratch = units.copy()
    scratch.update("pitfalls", "Pitfalls", "- never twice\n- never thrice")
    ordinary = doc.section_edits(edits_between(units, scratch), guided)
    assert StepBudget(5).admit(ordinary, guided) == ordinary
    lessons = slow.meta_lessons(0, steps, [{"edits": ["add section x (3 lines)"], "verdict": "reject"}])
    assert lessons.splitlines() == ["### Epoch 1", "- 1 edits were refused over the budget (median 30 changed "
                                    "lines): propose smaller ones.", "- add edits: 0 of 1 in accepted candidates."]
    repo_mode = slow.slow_edit(repo_of(("search-order", BODY)), "repo", guidance, "household")
    assert repo_mode.name == slow.GUIDANCE_SKILL and "held: pitfalls" in repo_mode.markdown


def test_consolidation_rewrites_the_guidance_and_the_lessons_instead_of_appending():
    """Epoch 2's guidance merged into epoch 1's: one line per subject with its counts summed, the
    newest epoch's word on a skill replacing the older one it contradicts (search-order, cited by
    failures in epoch 1, held in epoch 2), one header over both epochs; the meta skill's lessons
    are one section, rewritten over every epoch so far."""
    from skillos.training.textopt import slow

    first = ("Epoch 1 (2 steps, 1 candidates, 0 accepted):\n"
             "- kept failing: pick_heat_then_place_in_recep tasks read no skill in 1 of 2 steps\n"
             "- failures kept citing search-order (1 of 2 steps): follow it with care\n"
             "- held: pitfalls (only won games cited it, 1 steps)")
    second = ("Epoch 2 (3 steps, 2 candidates, 1 accepted):\n"
              "- kept failing: pick_heat_then_place_in_recep tasks read no skill in 2 of 3 steps\n"
              "- held: search-order (only won games cited it, 2 steps)\n"
              "- Read the task's verb before choosing a section.")
    assert slow.consolidate(first, second).splitlines() == [
        "Epochs 1-2 (5 steps, 3 candidates, 1 accepted):",
        "- kept failing: pick_heat_then_place_in_recep tasks read no skill in 3 of 5 steps",
        "- held: search-order (only won games cited it, 2 steps)",
        "- held: pitfalls (only won games cited it, 1 steps)",
        "- Read the task's verb before choosing a section."]
    assert slow.consolidate("", first) == first  # the first epoch's block is its guidance
    document = SkillRepo(None, [Skill("household", "A household guide.", SEED)])
    once = apply_edits(document, [slow.slow_edit(document, "document", first, "household")])
    assert slow.current_guidance(once, "document") == first
    merged, source = slow.guidance_model(None, 1, [], slow.current_guidance(once, "document"))
    twice = apply_edits(once, [slow.slow_edit(once, "document", merged, "household")])
    block = slow.current_guidance(twice, "document")
    assert source == "rules" and block.count("kept failing") == 1 and block.startswith("Epoch")  # rewritten, not appended
    meta = "---\nname: meta\ndescription: How to edit skills.\n---\n# Editing\n"
    steps = [{"epoch": 0, "budget": {"refusals": [{"changed_lines": 30, "reason": "30 changed lines exceed 20"}]}}]
    after_one = slow.with_lessons(meta, 0, steps, [{"edits": ["add x"], "verdict": "reject"}])
    after_two = slow.with_lessons(after_one, 1, steps * 2, [{"edits": ["add x"], "verdict": "reject"},
                                                           {"edits": ["add y"], "verdict": "accept"}])
    assert after_two.count(slow.LESSONS) == 1 and after_two.startswith(meta.rstrip("\n"))
    assert "Over epochs 1-2:" in after_two and "- add edits: 1 of 2 in accepted candidates." in after_two
    assert "Over epochs 1-1:" not in after_two and "2 edits were refused over the budget" in after_two


def test_a_missing_meta_skill_is_one_line_before_anything_runs(tmp_path):
    result = run_cli("optimize", small_config(tmp_path, meta_skill="no-such/SKILL.md"), "--out", tmp_path / "r")
    assert result.returncode == 2 and "optimize.meta_skill" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.alfworld
@pytest.mark.slow  # two real runs (~60 s)
def test_a_run_killed_at_its_slow_update_resumes_with_its_records_and_versions(tmp_path, game_cache, monkeypatch):
    pytest.importorskip("alfworld", reason="needs the [alfworld] extra")
    import skillos
    from skillos.training.textopt import slow

    class Killed(Exception):
        pass

    real = slow.slow_edit

    def killed(*a, **k):
        raise Killed()

    cfg = skillos.load(small_config(tmp_path, slow_update=True), sets=["optimize.target=document"])
    out = tmp_path / "run"
    monkeypatch.setattr(slow, "slow_edit", killed)
    with pytest.raises(Killed):
        skillos.optimize(cfg, out=out)
    assert [json.loads(x)["g"] for x in (out / "steps.jsonl").read_text().splitlines()] == [0]
    monkeypatch.setattr(slow, "slow_edit", real)
    report = skillos.optimize(cfg, out=out, resume=True)
    steps = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert [s["g"] for s in steps] == [0, 1] and steps[1]["slow_update"]
    assert sorted(p.name for p in (out / "meta_skill").iterdir()) == ["after-step-0001.md", "v0000.md"]
    history = [json.loads(x) for x in (out / "best_skill_history.jsonl").read_text().splitlines()]
    assert (out / history[-1]["file"]).read_text() == (out / "best_skill.md").read_text()
    assert report["best_skill"] == str(out / "best_skill.md")


def test_the_budget_decays_to_half_of_max_lines_unless_min_lines_says_otherwise():
    from skillos import config
    from skillos.config import ConfigError

    cfg = config.load(SHIPPED, sets=["optimize.max_lines=5"])  # one key is enough to set the learning rate
    assert (cfg.optimize.max_lines, cfg.optimize.last_lines) == (5, 2)
    assert config.load(SHIPPED, sets=["optimize.max_lines=5", "optimize.min_lines=5"]).optimize.last_lines == 5
    with pytest.raises(ConfigError, match=r"optimize.min_lines \(6\) is above optimize.max_lines \(5\)"):
        config.load(SHIPPED, sets=["optimize.max_lines=5", "optimize.min_lines=6"])
    with pytest.raises(ConfigError, match="optimize.max_edits: unknown key"):  # the old count of edits is gone
        config.load(SHIPPED, sets=["optimize.max_edits=4"])


def test_a_model_proposers_every_reply_is_parsed_or_counted_as_failed():
    """optimize's LLM proposer on a chat that fails, answers in prose, names only refused operations
    and edits: each step's reply is recorded, and the run's summary counts them (None for rules)."""
    from skillos.evals.backends.chat import BackendError, ChatResult
    from skillos.training.textopt.optimize import LLMProposer, RejectedMemory, proposer_replies

    class Chat:
        def __init__(self, replies):
            self.replies = list(replies)

        def chat(self, messages, tools=None):
            reply = self.replies.pop(0)
            if isinstance(reply, Exception):
                raise reply
            return reply

    add = {"name": "curate_and_advance", "arguments": {"operations": [
        {"op": "insert", "skill_name": "heat", "content": "Heat the X with the microwave."}]}}
    refused = {"name": "curate_and_advance", "arguments": {"operations": [{"op": "insert", "skill_name": "x"}]}}
    proposer = LLMProposer.__new__(LLMProposer)
    proposer.chat, proposer.meta_skill = Chat([BackendError("503 from the endpoint"), ChatResult("I would add a skill."),
                                               ChatResult("", [refused]), ChatResult("", [add])]), None
    steps = []
    for _ in range(4):
        edits = proposer.propose(repo_of(), [], RejectedMemory(None), 40)
        steps.append({"proposer_reply": proposer.reply, "edits": len(edits)})
    failures = [s["proposer_reply"]["failure"] for s in steps]
    assert failures[0].startswith("model call failed: 503")
    assert failures[1] == "the reply held no parseable tool call: 'I would add a skill.'"
    assert failures[2].startswith("every operation its calls named was refused: - insert x: refused: no content")
    assert failures[3] is None and steps[3]["edits"] == 1 and steps[3]["proposer_reply"]["applied_ops"] == 1
    summary = proposer_replies(steps)
    assert summary["steps"] == 4 and summary["parsed"] == 1 and summary["failed"] == 3
    assert proposer_replies([{"proposer_reply": None}]) is None  # the rules: no reply to count
    assert HeuristicProposer.reply is None
