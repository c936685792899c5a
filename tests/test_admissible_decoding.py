"""Choosing by likelihood (issue 63): `executor.decoding: admissible` scores every admissible
action as a continuation of the prompt with one prompt pass (its KV cache reused for the
candidates, batched) and takes the most likely; checked against scoring each whole sequence on
its own with the real tiny model, on a real scripted game (nothing coerced), in the config's
rules, gate 1's diff against the paper and the trace."""

import pytest
import torch
from conftest import ROOT

from skillos import config as cfgmod
from skillos.config import ExecutorConfig
from skillos.errors import ConfigError
from skillos.evals.backends.chat import make_chat

MESSAGES = [{"role": "system", "content": "You are an agent in a household text game."},
            {"role": "user", "content": "Your task is to: heat some egg and put it in diningtable.\n"
                                        "Admissible actions:\ngo to microwave 1\ngo to fridge 1\nlook"}]
ACTIONS = ["go to microwave 1", "go to fridge 1", "take egg 1 from countertop 1", "look", "inventory",
           "examine the drawer 2 on the left"]


def _whole(chat, messages, continuations, likelihood, prefix):
    """Each continuation's log-likelihood from a forward pass over prompt + continuation alone."""
    prompt = chat.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids = chat.tokenizer(prompt + prefix, add_special_tokens=False)["input_ids"]
    out = []
    with torch.no_grad():
        for text in continuations:
            cont = chat.tokenizer(text, add_special_tokens=False)["input_ids"]
            logp = chat.net(input_ids=torch.tensor([ids + cont])).logits[0].float().log_softmax(-1)
            total = sum(float(logp[len(ids) + j - 1, cont[j]]) for j in range(len(cont)))
            out.append(total / len(cont) if likelihood == "mean" else total)
    return out


@pytest.mark.parametrize("likelihood", ["mean", "sum"])
def test_one_prompt_pass_scores_as_each_whole_sequence_does(likelihood, monkeypatch):
    from skillos.evals.backends import hf_chat

    chat = make_chat(ExecutorConfig(backend="hf", model="tiny-qwen2", decoding="admissible"))
    texts = [f"{a}</action>" for a in ACTIONS]
    monkeypatch.setattr(hf_chat, "SCORE_TOKENS", 12)  # several passes, each from the prompt's cache alone
    scored = chat.score(MESSAGES, texts, likelihood, prefix="<action>")
    cached = scored.values
    assert cached == pytest.approx(_whole(chat, MESSAGES, texts, likelihood, "<action>"), abs=1e-4)
    assert len(set(round(x, 6) for x in cached)) > 1  # the candidates are told apart
    # the cache is cut back to the prompt after each pass: scoring again gives the same numbers
    assert chat.score(MESSAGES, texts, likelihood, prefix="<action>").values == pytest.approx(cached, abs=1e-6)
    # what the model read: the prompt once and every candidate's tokens
    prompt = chat.tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False) + "<action>"
    assert scored.tokens_read == len(chat.tokenizer(prompt, add_special_tokens=False)["input_ids"]) + sum(
        len(chat.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts)


def test_the_executor_takes_the_most_likely_admissible_action_and_nothing_is_coerced(monkeypatch):
    from skillos.evals.envs.scripted import ScriptedEnv, ScriptedGame
    from skillos.evals.envs.registry import environment
    from skillos.evals.runner import play

    executor = environment("household").make_executor(ExecutorConfig(backend="hf", model="tiny-qwen2",
                                                                      decoding="admissible"))
    episode = executor.new_episode("heat some egg and put it in diningtable", [])
    from skillos.evals.backends.hf_chat import Scored

    scores = {}
    real = executor.chat.score

    def seen(messages, texts, likelihood, prefix):
        assert prefix == "<action>" and likelihood == "mean"  # the opening is context, the action is scored
        scores.update(zip(texts, real(messages, texts, likelihood, prefix).values))
        return Scored([scores[t] for t in texts], 0)

    monkeypatch.setattr(executor.chat, "score", seen)
    chosen = episode.act("You are in the middle of a room.", ACTIONS)
    best = max(ACTIONS, key=lambda a: scores[f"{a}</action>"])
    assert chosen == best and episode.reformats == 0
    # ties go to the first listed action
    monkeypatch.setattr(executor.chat, "score", lambda messages, texts, likelihood, prefix: Scored([0.0] * len(texts), 0))
    assert episode.act("Nothing happens.", ["look", "inventory"]) == "look"
    # a whole game on a real env: every action admissible, none coerced
    monkeypatch.setattr(executor.chat, "score", real)
    traj = play(ScriptedEnv(win_action=None), executor, None, ScriptedGame("g1"), max_steps=3, top_k=0)
    assert len(traj.steps) == 3 and traj.coerced == 0


def test_a_backend_that_cannot_score_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"executor\.decoding: admissible needs a backend that scores .*hf"):
        ExecutorConfig(backend="anthropic", model="claude-x", decoding="admissible").rules("executor")
    with pytest.raises(ConfigError, match="executor.decoding"):
        cfgmod.from_dict({"executor": {"backend": "anthropic", "model": "x", "decoding": "admissible"}})
    # the OpenAI API echoes no prompt log-probabilities: only a base_url server scores
    with pytest.raises(ConfigError, match=r"executor\.decoding: admissible .*OpenAI API does not .*base_url"):
        ExecutorConfig(backend="openai", model="gpt-4o-mini", decoding="admissible").rules("executor")
    ExecutorConfig(backend="openai", model="m", base_url="http://127.0.0.1:1/v1", decoding="admissible").rules("executor")
    ExecutorConfig(backend="hf", model="tiny-qwen2", decoding="admissible").rules("executor")  # no error


def test_gate_1_reads_admissible_decoding_as_a_departure_and_the_trace_shows_it_arriving():
    from skillos import gates

    cfg = cfgmod.load(ROOT / "evals" / "configs" / "smollm2-admissible.yaml")
    rows = {r.check: r for r in gates.check(cfg).results}
    assert rows["table.executor.decoding"].status == "WARN"  # declared in the config's divergences
    bare = cfgmod.from_dict({"reference": "skillos-paper/alfworld",
                             "executor": {"backend": "hf", "model": "tiny-qwen2", "decoding": "admissible"}})
    assert {r.check: r for r in gates.check(bare).results}["table.executor.decoding"].status == "FAIL"
    plain = cfgmod.from_dict({"reference": "skillos-paper/alfworld",
                              "executor": {"backend": "hf", "model": "tiny-qwen2"}})
    assert {r.check: r for r in gates.check(plain).results}["table.executor.decoding"].status == "PASS"


def test_nothing_sampled_or_generated_is_asked_of_admissible_decoding_and_the_trace_shows_it_arriving():
    """Under admissible decoding the sampler and max_tokens do not apply (their table rows and
    checks SKIP with the reason); the trace follows executor.decoding to HFChat.score, and to
    generate() when the executor writes its action."""
    from skillos import gates

    cfg = cfgmod.load(ROOT / "evals" / "configs" / "smollm2-admissible.yaml")
    report = gates.check(cfg, trace=True)
    by_check = {r.check: r for r in report.results}
    for check in ("table.executor.temperature", "table.executor.top_p", "table.executor.top_k", "executor-max-tokens"):
        assert by_check[check].status == "SKIP" and "admissible" in by_check[check].detail, check
    assert by_check["decoding-executor"].status == "PASS" and "likelihood mean" in by_check["decoding-executor"].detail
    rows = {row.key: row for row in report.trace}
    assert rows["executor.decoding"].applied is True and "HFChat.score" in rows["executor.decoding"].line()
    assert rows["executor.likelihood"].applied is True and "mean" in rows["executor.likelihood"].line()
    plain = cfgmod.from_dict({"reference": "skillos-paper/alfworld",
                              "executor": {"backend": "hf", "model": "tiny-qwen2", "temperature": 0.6}})
    rows = {row.key: row for row in gates.check(plain, trace=True).trace}
    assert rows["executor.decoding"].applied is True and "generate()" in rows["executor.decoding"].line()


@pytest.mark.parametrize("env", ["slate", "reasoning"])
def test_an_executor_that_does_not_choose_from_a_list_refuses_admissible_decoding(env):
    """The slate's tool-calling executor and the reasoning env's one-turn reasoner write their
    answer: admissible decoding is refused in one line before any weights load, never played as
    free generation in silence."""
    from skillos.errors import SkillosError
    from skillos.evals.envs.registry import environment

    with pytest.raises(SkillosError, match="executor.decoding admissible: .* only generates"):
        environment(env).make_executor(ExecutorConfig(backend="hf", model="no-such-model-folder",
                                                      decoding="admissible"))


def test_the_gates_refuse_admissible_decoding_where_the_executor_only_writes_its_answer():
    """Gate 1 asks the environment that will play which decodings its model executor plays, before
    any game is loaded: a reasoning eval and selector training (its executor plays slates) fail
    `decoding-executor` with the fix; the household eval passes it."""
    from skillos import gates

    def row(sets):
        cfg = cfgmod.from_dict({"reference": "skillos-paper/alfworld",
                                "executor": {"backend": "hf", "model": "tiny-qwen2", "decoding": "admissible"}, **sets})
        return {r.check: r for r in gates.check(cfg).results}["decoding-executor"]

    assert row({}).status == "PASS"
    reasoning = row({"env": {"name": "reasoning"}})
    assert reasoning.status == "FAIL" and "LLMReasoner" in reasoning.detail and "generate" in reasoning.detail
    selector = row({"skillgate": {"trainer": "selector", "selector_credit": "clean-oracle"}})
    assert selector.status == "FAIL" and "slate environment's executor (SlateExecutor)" in selector.detail


def test_the_shuffled_control_deals_every_curated_body_to_another_name():
    """The with/without config's control keeps each curated skill's name and description (what
    retrieval matches) and gives it another skill's body: every body moved, none lost or doubled,
    and both folders record the same games as curated on (none of them held out)."""
    from skillos.repo import SkillRepo

    skills = ROOT / "evals" / "configs" / "skills"
    curated, shuffled = SkillRepo.load(skills / "quickstart-curated"), SkillRepo.load(skills / "quickstart-shuffled")
    assert sorted(s.name for s in curated.skills) == sorted(s.name for s in shuffled.skills)
    assert len(curated.skills) >= 50
    for skill in curated.skills:
        other = shuffled.get(skill.name)
        assert other.description == skill.description and other.body != skill.body, skill.name
    assert sorted(s.body for s in curated.skills) == sorted(s.body for s in shuffled.skills)
    assert (skills / "quickstart-curated" / ".curated").read_text() == (skills / "quickstart-shuffled" / ".curated").read_text()


class _EchoingServer:
    """A legacy completions endpoint over real weights (the tiny model, in this process): each
    prompt of token ids is echoed with every token's log-probability, as `vllm serve` and
    llama.cpp's server answer `echo` with `logprobs` (the first token has none). The math is the
    model's own; what is under test is the client that asks for it and reads it back."""

    def __init__(self, echo_logprobs: bool = True):
        import http.server
        import json
        import threading

        from skillos.evals.backends.hf_chat import load_weights

        net, _, _ = load_weights("tiny-qwen2")
        self.requests = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((self.path, body))
                choices = []
                for i, ids in enumerate(body["prompt"]):
                    with torch.no_grad():
                        logp = net(input_ids=torch.tensor([ids])).logits[0].float().log_softmax(-1)
                    echoed = [None] + [float(logp[j - 1, ids[j]]) for j in range(1, len(ids))] + [-0.5]
                    choices.append({"index": i, "text": "x", "finish_reason": "length",
                                    "logprobs": {"token_logprobs": echoed} if echo_logprobs else None})
                reply = json.dumps({"object": "text_completion", "choices": choices[::-1],  # any order: by index
                                    "usage": {"prompt_tokens": sum(map(len, body["prompt"])),
                                              "completion_tokens": len(choices)}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()


@pytest.mark.parametrize("likelihood", ["mean", "sum"])
def test_a_server_that_echoes_log_probabilities_scores_as_the_model_in_process_does(likelihood, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "local")
    server = _EchoingServer()
    try:
        remote = make_chat(ExecutorConfig(backend="openai", model="tiny-qwen2", base_url=server.base_url,
                                          decoding="admissible"))
        local = make_chat(ExecutorConfig(backend="hf", model="tiny-qwen2", decoding="admissible"))
        texts = [f"{a}</action>" for a in ACTIONS]
        scored = remote.score(MESSAGES, texts, likelihood, prefix="<action>")
        assert scored.values == pytest.approx(local.score(MESSAGES, texts, likelihood, prefix="<action>").values,
                                              abs=1e-4)
        path, body = server.requests[-1]
        # one request: the legacy endpoint, every candidate as token ids after the same prompt, echoed
        assert path == "/v1/completions" and body["echo"] is True and body["logprobs"] >= 1
        conts = [local.tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]
        assert [p[len(p) - len(c):] for p, c in zip(body["prompt"], conts)] == conts
        assert len({tuple(p[:len(p) - len(c)]) for p, c in zip(body["prompt"], conts)}) == 1  # one shared prompt
        assert scored.tokens_read == sum(map(len, body["prompt"]))  # as the endpoint reported it
    finally:
        server.close()


def test_a_server_that_echoes_nothing_leaves_the_step_unmeasured_and_the_openai_api_is_refused(monkeypatch):
    from skillos.evals.backends.chat import BackendError

    monkeypatch.setenv("OPENAI_API_KEY", "local")
    server = _EchoingServer(echo_logprobs=False)
    try:
        remote = make_chat(ExecutorConfig(backend="openai", model="tiny-qwen2", base_url=server.base_url,
                                          decoding="admissible"))
        with pytest.raises(BackendError, match="echoed no prompt log-probabilities"):
            remote.score(MESSAGES, ["look</action>"], "mean", prefix="<action>")
    finally:
        server.close()
    # a served model whose tokenizer is not here cannot be scored: refused when the backend is built
    with pytest.raises(Exception, match="needs the served model's tokenizer"):
        make_chat(ExecutorConfig(backend="openai", model="no-such-org/no-such-model", base_url=server.base_url,
                                 decoding="admissible"))


def test_the_trace_follows_admissible_decoding_to_the_servers_completions_endpoint():
    from skillos.evals.backends.chat import sent

    arrived = sent(ExecutorConfig(backend="openai", model="m", base_url="http://127.0.0.1:1/v1", decoding="admissible",
                                  temperature=0.7))
    assert arrived["decoding"] == (arrived["decoding"][0], "admissible") and "/completions" in arrived["decoding"][0]
    assert arrived["temperature"][1] is None and "nothing sampled" in arrived["temperature"][0]
    assert "echoed log-probabilities" in arrived["likelihood"][0]
    generating = sent(ExecutorConfig(backend="openai", model="m", base_url="http://127.0.0.1:1/v1", temperature=0.7))
    assert generating["decoding"][1] == "generate" and generating["temperature"][1] == 0.7


def test_a_prompt_over_the_models_context_is_refused_at_once_for_generation_and_scoring(monkeypatch):
    from skillos.evals.backends.chat import BackendError

    chat = make_chat(ExecutorConfig(backend="hf", model="tiny-qwen2", decoding="admissible", max_tokens=4))
    monkeypatch.setattr(chat.net.config, "max_position_embeddings", 40)  # a short context, without 8k tokens
    with pytest.raises(BackendError, match=r"the prompt is \d+ tokens, over the model's context of 40"):
        chat.chat(MESSAGES)
    with pytest.raises(BackendError, match="over the model's context of 40"):
        chat.score(MESSAGES, ["look</action>"], "mean", prefix="<action>")
    # a rope-scaled model reads past max_position_embeddings: not refused by its unscaled length
    yarn = {"rope_type": "yarn", "factor": 4.0, "rope_theta": 10000.0, "original_max_position_embeddings": 40}
    monkeypatch.setattr(chat.net.config, "rope_parameters", yarn)
    monkeypatch.setattr(chat.net.config, "rope_scaling", yarn, raising=False)
    chat._fits(400)
    monkeypatch.setattr(chat.net.config, "max_position_embeddings", 4096)
    assert chat.score(MESSAGES, ["look</action>"], "mean", prefix="<action>").values  # fits: scored


@pytest.mark.parametrize("reply, why", [
    ({"choices": [{"index": 0, "logprobs": {"token_logprobs": [None, -1.0, -2.0, -3.0, -0.5]}}]}, "shifted or padded"),
    ({"choices": [{"index": 0, "logprobs": {"token_logprobs": [-0.1, -1.0, -3.0, -0.5]}}]}, "first token scored"),
    ({"choices": [{"index": 0, "logprobs": {"token_logprobs": [None, -1.0]}}]}, "shifted or padded"),
    ({"choices": [{"index": None, "logprobs": {"token_logprobs": [None, -1.0, -3.0]}}]}, "not 0..0"),
    ({"choices": [{"index": 0, "logprobs": {"token_logprobs": [None, -1.0, None]}}]}, "unscored"),
    ({"choices": [{"index": 0, "logprobs": None}]}, "echoed no prompt log-probabilities"),
    ({"choices": []}, "0 choices for 1"),
])
def test_an_echo_that_does_not_match_what_was_sent_is_refused_never_read_shifted(reply, why):
    """A 2-token context and a 1-token candidate: only [None, a, b] or [None, a, b, generated] is read."""
    from skillos.evals.backends.chat import BackendError
    from skillos.evals.backends.openai_chat import echoed_totals

    assert echoed_totals({"choices": [{"index": 0, "logprobs": {"token_logprobs": [None, -1.0, -3.0, -0.5]}}]},
                         2, [[7]]) == [-3.0]
    with pytest.raises(BackendError, match=why):
        echoed_totals(reply, 2, [[7]])
    # two candidates answered out of order are read by their index; a repeated index is refused
    two = [{"index": 1, "logprobs": {"token_logprobs": [None, -1.0, -4.0]}},
           {"index": 0, "logprobs": {"token_logprobs": [None, -1.0, -3.0]}}]
    assert echoed_totals({"choices": two}, 2, [[7], [8]]) == [-3.0, -4.0]
    with pytest.raises(BackendError, match="not 0..1"):
        echoed_totals({"choices": [two[0], dict(two[0])]}, 2, [[7], [8]])


def test_a_served_model_whose_folder_has_no_tokenizer_is_refused_in_one_line(tmp_path):
    from skillos.errors import SkillosError
    from skillos.evals.backends.openai_chat import scoring_tokenizer

    (tmp_path / "config.json").write_text('{"model_type": "qwen2"}')  # weights' config, no tokenizer files
    with pytest.raises(SkillosError, match="needs the served model's tokenizer here.*has none that loads"):
        scoring_tokenizer(str(tmp_path))
