"""Issue 14: one test per class of failure found by the adversarial pass (each parametrized over
variations of its class). Every bad input is a one-line error, never a traceback or a silent
wrong result."""

import json
import os

import pytest

from conftest import run_cli
from skillos import config
from skillos.errors import ConfigError, SkillosError

SKILL = "---\nname: {name}\ndescription: {desc}\n---\nbody\n"


def _skill(folder, name="open-drawers", desc="Open drawers first."):
    (folder / name).mkdir(parents=True, exist_ok=True)
    (folder / name / "SKILL.md").write_text(SKILL.format(name=name, desc=desc))


def _write(tmp_path, text, name="c.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


# -- class 1: named inputs exist, relative paths resolve beside the config -------------------
@pytest.mark.parametrize("arms, key, value, fragment", [
    ('["no_memory", "repo:a"]', "static_repos", "{a: missing}", "missing"),
    ('["no_memory", "repo:a"]', "static_repos", "{a: afile}", "is a file"),
    ('["no_memory", "static_repo"]', "static_repo", "missing", "missing"),
    ('["no_memory", "static_repo"]', "static_repo", "afile", "is a file"),
    ('["no_memory", "curator:c"]', "curators", "{c: ./no-ckpt}", "missing"),
])
def test_missing_named_inputs_are_errors_and_paths_resolve_beside_the_config(
        tmp_path, monkeypatch, arms, key, value, fragment):
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "afile").write_text("x")
    path = _write(conf, f"eval:\n  arms: {arms}\n  {key}: {value}\n")
    monkeypatch.chdir(tmp_path)  # the shell's cwd is not the config's folder
    with pytest.raises(ConfigError) as info:
        config.load(path)
    assert fragment in str(info.value) and "\n" not in str(info.value)
    # the same relative name resolves beside the config, not against the cwd
    _skill(conf / "skills")
    good = _write(conf, 'eval:\n  arms: ["no_memory", "repo:a"]\n  static_repos: {a: skills}\n', "good.yaml")
    cfg = config.load(good)
    assert config.static_repo_path(cfg, "repo:a") == str(conf / "skills")
    for other in ("compute:\n  deepspeed_config: nope.json\n", "optimize:\n  seed_skills: nope\n",
                  "training:\n  resume_from_checkpoint: nope\n", "eval:\n  output_dir: conf/afile\n"):
        with pytest.raises(ConfigError):
            config.load(_write(conf, other, "other.yaml"))


# -- class 8: bounds with the bound in the message; capped, alias-safe, FIFO-safe reads -------
@pytest.mark.parametrize("text, fragment", [
    ("env:\n  n_games: 1000000000\n", "between 1 and 10000"),
    ("retrieval:\n  top_k: 1000000000\n", "between 0 and 100"),
    ("eval:\n  bootstrap: 1000000000000\n", "between 100 and 1000000"),
    ("eval:\n  concurrency: 100000\n", "between 1 and 1024"),
    ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
     "refusing"),
    ("experiment:\n  name: " + "x" * 10 + "\n" + "#" * (2 << 20) + "\n", "at most"),
])
def test_unbounded_inputs_are_refused_with_their_bound(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as info:
        config.load(_write(tmp_path, text))
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert len(str(info.value)) < 600


def test_fifo_config_and_skill_do_not_hang(tmp_path):
    os.mkfifo(tmp_path / "c.yaml")
    with pytest.raises(ConfigError, match="not a regular file"):
        config.load(tmp_path / "c.yaml")
    (tmp_path / "repo" / "a").mkdir(parents=True)
    os.mkfifo(tmp_path / "repo" / "a" / "SKILL.md")
    result = run_cli("skills", "validate", tmp_path / "repo" / "a" / "SKILL.md")
    assert result.returncode == 1 and "not a regular file" in result.stdout + result.stderr


# -- class 9: config mistakes are one-line load errors, not failures later --------------------
@pytest.mark.parametrize("text, fragment", [
    ("", "the config is empty"),
    ("# only a comment\n", "the config is empty"),
    ("{}\n", "the config is empty"),
    ("env:\n  n_games: 3\nenv:\n  n_games: 4\n", "given twice"),
    ("eval:\n  arms: [no_memory]\n  arms: [closed_loop]\n", "given twice"),
    ("experiment:\n  expected_effect: 0\n", "experiment.expected_effect: must be between"),
    ("experiment:\n  expected_discordance: -1\n", "experiment.expected_discordance: must be between"),
    ("experiment:\n  expected_discordance: 5\n", "experiment.expected_discordance: must be between"),
    ("executor:\n  timeout_s: -1\n", "executor.timeout_s: must be between"),
    ("curator:\n  max_retries: -3\n", "curator.max_retries: must be between"),
    ("env:\n  seed: 1208925819614629174706176\n", "env.seed: must be between"),
    ("executor:\n  temperature: .nan\n", "executor.temperature: must be a finite number"),
    ("eval:\n  alpha: .inf\n", "eval.alpha: must be a finite number"),
    ("training:\n  learning_rate: -1.0\n", "training.learning_rate: must be between"),
    ("experiment:\n  name: ../../x\n", "experiment.name"),
    ("experiment:\n  name: \"a/b\"\n", "experiment.name"),
])
def test_config_mistakes_are_one_line_load_errors(tmp_path, text, fragment):
    with pytest.raises(ConfigError) as info:
        config.load(_write(tmp_path, text))
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_config_mistake_via_cli_is_exit_2_without_traceback(tmp_path):
    result = run_cli("gate", "check", _write(tmp_path, "experiment:\n  expected_effect: 0\n"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0


# -- class 7: names match whole strings, single lines, no symlink escapes, usual file modes ---
@pytest.mark.parametrize("name, desc", [
    ("pwn\n", "ok"), ("pwn\r", "ok"), ("a--b", "ok"), ("Upper", "ok"), ("a\x00b", "ok"),
    ("ok-name", "line\rbreak"), ("ok-name", "line\u2028sep"), ("ok-name", "tab\x07bell"),
])
def test_names_and_descriptions_must_match_whole_single_lines(tmp_path, name, desc):
    from skillos.repo import SkillRepo

    repo = SkillRepo(tmp_path / "repo")
    assert not repo.insert(name, desc, "body").ok
    assert not (tmp_path / "repo").exists() or not any((tmp_path / "repo").iterdir())


@pytest.mark.parametrize("link", ["folder", "file"])
def test_symlinks_out_of_the_repo_are_refused(tmp_path, link):
    from skillos.errors import SkillError
    from skillos.repo import SkillRepo, validate_path

    outside = tmp_path / "outside"
    _skill(outside, "secret")
    repo = tmp_path / "repo"
    _skill(repo, "fine")
    if link == "folder":
        (repo / "secret").symlink_to(outside / "secret")
    else:
        (repo / "secret").mkdir()
        (repo / "secret" / "SKILL.md").symlink_to(outside / "secret" / "SKILL.md")
    assert any("resolves outside" in p for p in validate_path(repo))
    with pytest.raises(SkillError, match="resolves outside"):
        SkillRepo.load(repo)


def test_written_files_get_the_usual_mode_and_experiment_names_stay_names(tmp_path):
    import stat

    from skillos.repo import SkillRepo

    _skill(tmp_path / "repo")
    SkillRepo.load(tmp_path / "repo").copy(tmp_path / "out")
    mask = os.umask(0o022)
    os.umask(mask)
    mode = stat.S_IMODE((tmp_path / "out" / "open-drawers" / "SKILL.md").stat().st_mode)
    assert mode == 0o666 & ~mask
    (tmp_path / "afile").write_text("x")
    with pytest.raises(SkillosError, match="is a file"):
        SkillRepo.load(tmp_path / "repo").copy(tmp_path / "afile" / "skills")
    for bad in ("../../x", "/abs", "a b", ".hidden", "x" * 200, "a\nb"):
        with pytest.raises(ConfigError, match="experiment.name"):
            config.from_dict({"experiment": {"name": bad}})


@pytest.mark.parametrize("make", ["empty-folder", "skill-md-is-a-folder", "export-into-file"])
def test_skill_commands_on_odd_paths_are_one_line(tmp_path, make):
    target = tmp_path / "x"
    if make == "empty-folder":
        target.mkdir()
        result = run_cli("skills", "validate", target)
        assert result.returncode == 1 and "no skills found" in result.stdout
    elif make == "skill-md-is-a-folder":
        (target / "SKILL.md").mkdir(parents=True)
        result = run_cli("skills", "validate", target)
        assert result.returncode == 1 and "is a folder" in result.stdout
    else:
        _skill(tmp_path / "repo")
        target.write_text("x")
        result = run_cli("skills", "export", tmp_path / "repo", target)
        assert result.returncode == 2 and "is a file" in result.stderr
    assert "Traceback" not in result.stderr


# -- a raw endpoint: any status and body, echoing what it was sent --------------------------
class RawEndpoint:
    """A local HTTP server answering every POST with a fixed status and body; `{auth}` in the
    body is replaced by the Authorization / x-api-key header it received (an endpoint that
    echoes the key in its error text)."""

    def __init__(self, status=200, body="", content_type="application/json"):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        endpoint = self
        self.status, self.body, self.content_type, self.calls = status, body, content_type, 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                endpoint.calls += 1
                auth = self.headers.get("Authorization") or self.headers.get("x-api-key") or ""
                key = auth.removeprefix("Bearer ")  # the bare key: no known shape to catch it by
                data = endpoint.body.replace("{auth}", key).encode()
                self.send_response(endpoint.status)
                self.send_header("Content-Type", endpoint.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server.server_port}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _trajectory(won=True):
    from skillos.evals.trajectory import Step, Trajectory

    return Trajectory("g1", "put a mug in the coffeemachine", "pick_and_place_simple",
                      steps=[Step("go to desk 1", "You see a mug 1.")], won=won, retrieved=[])


def _curator(url, kind="openai", tools="paper"):
    from skillos.config import CuratorConfig
    from skillos.evals.backends.llm_curator import LLMCurator

    base = url + "/v1" if kind == "openai" else url
    return LLMCurator(CuratorConfig(backend=kind, model="m", base_url=base, max_retries=0,
                                    timeout_s=2.0, tools=tools))


# -- class 2: a malformed curator reply is a counted failed call, never a crash -------------
MANY = [{"op": "insert", "skill_name": f"s-{i}", "content": "d\nb"} for i in range(100)]


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("tools, calls, applied_at_most", [
    ("curate_and_advance", [{"name": "curate_and_advance", "arguments": ["not", "a", "dict"]}], 0),
    ("curate_and_advance", [{"name": "curate_and_advance", "arguments": "a string"}], 0),
    ("curate_and_advance", [{"name": "curate_and_advance", "arguments": {"operations": "nope"}}], 0),
    ("curate_and_advance", [{"name": "curate_and_advance", "arguments": {"operations": {"op": "x"}}}], 0),
    ("curate_and_advance", [{"name": "curate_and_advance", "arguments": {"operations": ["x", 3, None]}}], 0),
    ("curate_and_advance", [{"name": "curate_and_advance", "arguments": {"operations": [
        {"op": "insert", "skill_name": ["a"], "content": "d"}]}}], 0),
    ("curate_and_advance", [{"name": "curate_and_advance", "arguments": {"operations": MANY}}], 32),
    ("paper", [{"name": "new_skill_insert", "arguments": [1, 2]}], 0),
    ("paper", [{"name": "skill_delete", "arguments": {"skill_name": {"a": 1}}}], 0),
    ("paper", [{"name": "no_such_tool", "arguments": {}}], 0),
])
def test_malformed_curator_tool_calls_are_refused_and_counted(monkeypatch, kind, tools, calls,
                                                              applied_at_most):
    from llm_server import ScriptedLLM
    from skillos.evals.runner import _curate
    from skillos.repo import SkillRepo

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with ScriptedLLM(lambda m: {"content": "", "tool_calls": calls}) as server:
        url = server.openai_url[:-3] if kind == "openai" else server.anthropic_url
        counts = _curate(_curator(url, kind, tools), _trajectory(), SkillRepo(None))
    assert counts["curator_calls"] == 1
    assert counts["curator_applied_ops"] <= applied_at_most
    assert counts["curator_refused_ops"] + counts["curator_failed_calls"] >= 1


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("status, body, content_type", [
    (200, "<html><body>Bad gateway</body></html>", "text/html"),
    (200, "", "application/json"),
    (200, "not json at all", "application/json"),
    (200, '{"unexpected": "shape"}', "application/json"),
    (200, '{"choices": [], "content": 5}', "application/json"),
    (200, '{"choices": "x", "content": "y"}', "application/json"),
])
def test_an_endpoint_answering_garbage_is_a_failed_curator_call(monkeypatch, kind, status, body, content_type):
    from skillos.evals.runner import _curate
    from skillos.repo import SkillRepo

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with RawEndpoint(status, body, content_type) as endpoint:
        curator = _curator(endpoint.url, kind)
        repo = SkillRepo(None)
        counts = _curate(curator, _trajectory(), repo)
    assert counts == {"curator_calls": 1, "curator_failed_calls": 1, "curator_applied_ops": 0,
                      "curator_refused_ops": 0}
    assert len(repo) == 0 and curator.last_error


# -- class 4: no key byte in any file, stream or ledger row -----------------------------------
KEY = "zq9-private-value-7731"  # no known key shape: only the config naming its variable hides it


@pytest.mark.slow
@pytest.mark.alfworld
@pytest.mark.parametrize("status", [401, 200])
def test_an_endpoint_echoing_the_key_leaks_it_nowhere(tmp_path, game_cache, skillos_home, status):
    import json

    import yaml

    body = (json.dumps({"error": {"message": "bad key {auth}", "type": "auth"}}) if status != 200
            else json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                             "choices": [{"index": 0, "finish_reason": "stop", "message": {
                                 "role": "assistant", "content": "I use {auth} <action>look</action>"}}]}))
    with RawEndpoint(status, body) as endpoint:
        cfg = {"experiment": {"name": "leak"}, "env": {"n_games": 2, "n_train_games": 2, "max_steps": 3},
               "executor": {"backend": "openai", "model": "m", "base_url": endpoint.url + "/v1",
                            "api_key_env": "MY_LLM", "max_retries": 0, "timeout_s": 5.0,
                            "reasoning_effort": "low", "max_tokens": 4096},
               "curator": {"backend": "openai", "model": "m", "base_url": endpoint.url + "/v1",
                           "api_key_env": "MY_LLM", "max_retries": 0, "timeout_s": 5.0},
               "eval": {"workers": 1}}
        path = tmp_path / "leak.yaml"
        path.write_text(yaml.safe_dump(cfg))
        run = tmp_path / "run"
        overrides = ["--override", "rollout-positions=redaction test"]
        result = run_cli("eval", path, "--out", run, "--json", *overrides, env={"MY_LLM": KEY}, cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert KEY not in result.stdout + result.stderr
    assert endpoint.calls > 0, result.stderr[-2000:]
    if status == 401:  # the games ran, unmeasured, with the echoed key in their reason
        assert (run / "games.jsonl").exists(), result.stderr[-2500:]
        rows = (run / "games.jsonl").read_text()
        assert "bad key [redacted]" in rows
    for folder in (run, skillos_home):
        for file in folder.rglob("*"):
            if file.is_file():
                assert KEY.encode() not in file.read_bytes(), file


@pytest.mark.parametrize("var", ["MY_LLM", "OPENAI_API_KEY", "x"])
def test_key_values_of_named_variables_are_redacted_everywhere(tmp_path, monkeypatch, var):
    from skillos.evals.runner import row
    from skillos.evals.trajectory import Trajectory
    from skillos.ledger import Ledger
    from skillos.files import write_atomic

    monkeypatch.setenv(var, KEY)
    config.from_dict({"executor": {"backend": "openai", "model": "m", "api_key_env": var}})
    traj = Trajectory("g", "t", "k", won=None, unmeasured_reason=f"401 bad key {KEY}")
    assert KEY not in str(row("a", traj, 0))
    write_atomic(tmp_path / "f.json", f'{{"k": "{KEY}"}}')
    assert KEY not in (tmp_path / "f.json").read_text()
    assert KEY not in str(SkillosError(f"endpoint said {KEY}"))
    with Ledger(tmp_path / "l.db") as ledger:
        ledger.add_failure(f"saw {KEY}", "near-miss", kind="operational")
        ledger.start_run(ledger.add_experiment("e", "h"), "arm", {"note": KEY})
    assert KEY.encode() not in (tmp_path / "l.db").read_bytes()


# -- classes 5 and 6: curator failures counted and reported; empty executor replies unmeasured --
@pytest.mark.alfworld
@pytest.mark.parametrize("body", ["<html>oops</html>", ""])
def test_curator_failures_are_counted_per_game_and_arm_and_reach_the_ledger(tmp_path, game_cache, monkeypatch, body):
    from skillos.config import BackendConfig
    from skillos.evals.envs.alfworld.env import AlfworldEnv
    from skillos.evals.envs.alfworld.games import make_games
    from skillos.ledger.experiments import EvalRecord as _Record
    from skillos.evals.envs.registry import environment
    from skillos.evals.report import arm_summary
    from skillos.evals.runner import run_arm
    from skillos.ledger import Ledger
    from skillos.repo import SkillRepo

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    games = make_games("valid_unseen", 2, 0)
    with RawEndpoint(200, body, "text/html") as endpoint:
        executor = environment("household").make_executor(BackendConfig())
        rows = run_arm("closed_loop", games, env=AlfworldEnv(), executor=executor,
                       repo=SkillRepo(tmp_path / "repo"), curator=_curator(endpoint.url),
                       max_steps=5, out=tmp_path / "games.jsonl", retrieval_mode="bm25", top_k=5,
                       concurrency=1, wave_size=1)
    assert [r["curator_failed_calls"] for r in rows] == [1, 1]
    assert all(r["success"] is not None for r in rows)  # the games themselves were measured
    summary = arm_summary(rows)
    assert (summary["curator_calls"], summary["curator_failed_calls"], summary["curator_failure_rate"]) == (2, 2, 1.0)
    cfg = config.from_dict({"eval": {"arms": ["no_memory", "closed_loop"]}})
    with Ledger(tmp_path / "l.db") as ledger:
        record = _Record(ledger, cfg, tmp_path)
        record.finished({"arms": {"no_memory": arm_summary([]), "closed_loop": summary}}, tmp_path / "games.jsonl")
        failures = [f["what"] for f in ledger.rows("failures")]
    assert any("2 of 2 curator calls failed" in f for f in failures)


@pytest.mark.alfworld
@pytest.mark.parametrize("replies", [["", ""], ["   ", "\n"], ["", ""] * 3])
def test_an_executor_turn_with_no_content_after_the_retry_is_unmeasured(tmp_path, game_cache, monkeypatch, replies):
    from llm_server import ScriptedLLM
    from skillos.config import BackendConfig
    from skillos.evals.envs.alfworld.env import AlfworldEnv
    from skillos.evals.envs.alfworld.games import make_games
    from skillos.evals.envs.registry import environment
    from skillos.evals.runner import run_arm

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    script = iter(replies * 10)
    with ScriptedLLM(lambda m: next(script)) as server:
        executor = environment("household").make_executor(BackendConfig(backend="openai", model="m",
                                                                          base_url=server.openai_url))
        rows = run_arm("a", make_games("valid_unseen", 1, 0), env=AlfworldEnv(), executor=executor,
                       repo=None, max_steps=5, retrieval_mode="bm25", top_k=5, concurrency=1, wave_size=1)
    assert rows[0]["success"] is None and rows[0]["unmeasured"]
    assert "no content after the reformat retry" in rows[0]["unmeasured_reason"]


# -- class 3: workers die with their parent; one writer per run folder ------------------------
def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(pids, seconds=10.0):
    import time

    deadline = time.monotonic() + seconds
    while any(map(_alive, pids)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


@pytest.mark.parametrize("start", ["fork", "spawn"])
def test_a_worker_dies_when_its_parent_is_killed(tmp_path, start):
    """A parent starts a worker the way the eval does (die_with_parent first), then is SIGKILLed."""
    import signal
    import subprocess
    import sys
    import time

    script = f"""
import multiprocessing as mp, os, time
from skillos.safety import die_with_parent
def work(parent):
    die_with_parent(parent)
    open({str(tmp_path / 'worker.tmp')!r}, 'w').write(str(os.getpid()))
    os.rename({str(tmp_path / 'worker.tmp')!r}, {str(tmp_path / 'worker.pid')!r})
    time.sleep(60)
if __name__ == '__main__':
    mp.get_context({start!r}).Process(target=work, args=(os.getpid(),)).start()
    time.sleep(60)
"""
    (tmp_path / "parent.py").write_text(script)  # a file: spawn re-imports the main module
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py")], start_new_session=True)
    pid_file = tmp_path / "worker.pid"
    deadline = time.monotonic() + 30
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    os.kill(parent.pid, signal.SIGKILL)  # the main process only, not its group
    parent.wait()
    assert _wait_gone([worker]) == []


def test_a_run_folder_has_one_writer_and_the_refusal_names_its_pid(tmp_path):
    from skillos.evals.experiment import run_eval
    from skillos.safety import RunLock

    out = tmp_path / "run"
    with RunLock(out, wait_s=0):
        cfg = config.from_dict({"env": {"n_games": 1, "n_train_games": 0}, "eval": {"arms": ["no_memory"]}})
        with pytest.raises(SkillosError, match=rf"PID {os.getpid()}"):
            RunLock(out, wait_s=0.2).acquire()
        (out / "games.jsonl").write_text("")
        with pytest.raises(SkillosError, match=rf"PID {os.getpid()}\) is writing"):
            run_eval(cfg, out, resume=True)
    RunLock(out, wait_s=0).acquire().release()  # released: the next writer gets it


@pytest.mark.slow
@pytest.mark.alfworld
def test_kill_9_of_the_main_process_then_resume_duplicates_nothing(tmp_path, game_cache):
    import json
    import signal
    import subprocess
    import sys
    import time

    import yaml

    from conftest import ROOT

    data = yaml.safe_load((ROOT / "evals" / "configs" / "quickstart.yaml").read_text())
    data["eval"]["workers"] = 2
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data))
    size = ["--n-games", "8", "--n-train-games", "8"]
    out = tmp_path / "run"
    job = subprocess.Popen([sys.executable, "-m", "skillos", "eval", str(path), *size, "--out", str(out)],
                           start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "SKILLOS_CACHE": str(game_cache)})
    rows = out / "games.jsonl"
    deadline = time.monotonic() + 300
    while (not rows.exists() or len(rows.read_text().splitlines()) < 2) and time.monotonic() < deadline:
        time.sleep(0.02)
    children = [int(p) for p in open(f"/proc/{job.pid}/task/{job.pid}/children").read().split()]
    assert children, "the arms were not played in worker processes"
    os.kill(job.pid, signal.SIGKILL)  # the main process only: its workers must not go on writing
    job.wait()
    assert _wait_gone(children) == []
    resumed = run_cli("eval", path, *size, "--out", out, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    keys = [(r["arm"], r["phase"], r["game_id"]) for name in ("games.jsonl", "curation.jsonl")
            for r in map(json.loads, (out / name).read_text().splitlines())]
    assert len(keys) == len(set(keys)) == 8 + 8 + 8


# -- class 10: the tracebacks left ------------------------------------------------------------
def test_a_training_launch_whose_extra_is_missing_fails_a_gate_with_the_pip_line(monkeypatch):
    import importlib.util

    from conftest import ROOT
    from skillos import gates

    cfg = config.load(ROOT / "training" / "configs" / "cpu-smoke.yaml")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    results = [r for r in gates.check(cfg, dry_run=False).results if r.check == "extras"]
    assert [r.status for r in results] == ["FAIL"]
    assert "pip install 'skillos[train]'" in results[0].detail and "torch" in results[0].seen


@pytest.mark.parametrize("case", ["eval-out-is-a-file", "export-out-is-a-folder", "damaged-ledger",
                                  "config-output-dir-is-a-file"])
def test_odd_paths_and_a_damaged_ledger_are_one_line_errors(tmp_path, skillos_home, case):
    from conftest import ROOT
    from skillos.ledger import Ledger

    afile = tmp_path / "afile"
    afile.write_text("x")
    if case == "eval-out-is-a-file":
        result = run_cli("eval", ROOT / "evals" / "configs" / "quickstart.yaml", "--out", afile)
    elif case == "export-out-is-a-folder":
        result = run_cli("ledger", "export", "failures", "--out", tmp_path)
    elif case == "config-output-dir-is-a-file":
        result = run_cli("gate", "check", _write(tmp_path, f"eval:\n  output_dir: {afile}\n"))
    else:
        with Ledger() as ledger:
            for i in range(400):
                ledger.add_failure(f"failure {i} " + "x" * 200, "near-miss", kind="operational")
        db = skillos_home / "ledger.db"
        data = bytearray(db.read_bytes())
        data[len(data) // 2:len(data) // 2 + 8192] = b"\xff" * 8192  # pages inside the table, header intact
        db.write_bytes(bytes(data))
        for wal in skillos_home.glob("ledger.db-*"):
            wal.unlink()
        result = run_cli("ledger", "export", "failures")
    assert result.returncode == 2, (result.stdout[-500:], result.stderr[-1500:])
    assert "Traceback" not in result.stderr and result.stderr.strip().count("\n") == 0


# -- class 11: training reruns and dirtiness -------------------------------------------------
def test_a_finished_training_run_is_reported_finished_not_trained_past_max_steps(tmp_path):
    import json

    from skillos.training.curator.trainer import train

    out = tmp_path / "ckpt"
    for step in (1, 2):
        (out / f"checkpoint-{step}").mkdir(parents=True)
        (out / f"checkpoint-{step}" / "trainer_state.json").write_text(json.dumps({"global_step": step}))
        (out / f"checkpoint-{step}" / "model.safetensors").write_bytes(b"w")
    cfg = config.from_dict({"training": {"max_steps": 2, "output_dir": str(out)}})
    summary = train(cfg, None, echo=lambda line: None)
    assert summary["finished"] and summary["finished_checkpoint"].endswith("checkpoint-2")
    assert sorted(p.name for p in out.iterdir()) == ["checkpoint-1", "checkpoint-2"]


def test_dirtiness_comes_from_tracked_files_only(tmp_path):
    import subprocess

    from skillos.ledger.store import git_version

    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.py").write_text("x = 1\n")
    subprocess.run([*git, "-C", str(tmp_path), "add", "a.py"], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-qm", "a"], check=True)
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "w.bin").write_text("w")  # a training output, untracked
    assert git_version(tmp_path)[1] is False
    (tmp_path / "a.py").write_text("x = 2\n")
    assert git_version(tmp_path)[1] is True


# -- class 12: the first hour ----------------------------------------------------------------
@pytest.mark.parametrize("k", [-1, 101, True, "3"])
def test_skill_search_refuses_a_k_out_of_range(tmp_path, k):
    from skillos.repo import SkillRepo, retrieve

    _skill(tmp_path / "repo")
    with pytest.raises(SkillosError, match="-k"):
        retrieve(SkillRepo.load(tmp_path / "repo"), "open a drawer", k, "bm25")


def test_ledger_first_hour_names_statuses_evidence_and_literal_search(tmp_path):
    from skillos.ledger import Ledger
    from skillos.ledger.store import LedgerError

    with Ledger(tmp_path / "l.db") as ledger:
        planned = ledger.add_experiment("launch-flow", "h")  # `ledger experiments add`
        assert ledger.find_or_add_experiment("launch-flow", "abc123") == planned  # the eval attaches
        assert ledger.find_or_add_experiment("launch-flow", "abc123") == planned
        assert ledger.find_or_add_experiment("launch-flow", "other") != planned  # another config
        assert ledger.resolve_experiment("launch-flow") > planned  # the newest of that name
        assert ledger.resolve_experiment(str(planned)) == planned
        with pytest.raises(LedgerError, match="no experiment named"):
            ledger.resolve_experiment("nope")
        crashed = ledger.add_experiment("crashed")
        ledger.correct("experiments", crashed, "status", "eval crashed", value="crashed")
        trained = ledger.add_experiment("trained")
        run = ledger.start_run(trained, "train")
        ledger.end_experiment_run(run, "finished")
        assert ledger.experiment(trained)["status"] == "finished"
        assert [e["id"] for e in ledger.evidence()] == [trained]  # not planned, not crashed
        ledger.add_failure("disk 100% full", "near-miss", kind="operational")
        ledger.add_failure("disk 1000 full", "near-miss", kind="operational")
        ledger.add_failure("a_b", "near-miss", kind="operational")
        ledger.add_failure("axb", "near-miss", kind="operational")
        assert [f["what"] for f in ledger.failures(text="100%")] == ["disk 100% full"]
        assert [f["what"] for f in ledger.failures(text="a_b")] == ["a_b"]


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_json_output_has_no_infinity_or_nan_tokens(value):
    import json

    from skillos.safety import json_text

    text = json_text({"mde": value, "rows": [value, 1.5]})
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text) == {"mde": None, "rows": [None, 1.5]}


@pytest.mark.alfworld
def test_progress_outside_a_terminal_is_plain_lines(tmp_path, game_cache):
    result = run_cli("quickstart", "--n-games", "2", "--n-train-games", "2", "--out", tmp_path / "run",
                     "--override", "mde=first-hour test", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "━" not in result.stderr and "…" not in result.stderr
    assert "closed_loop · eval games: 2/2" in result.stderr


@pytest.mark.alfworld
def test_the_paper_configs_dry_run_without_alfworld_data_summarises_and_says_how_to_get_it(monkeypatch):
    from conftest import ROOT

    monkeypatch.delenv("ALFWORLD_DATA", raising=False)
    configs = [p for p in (ROOT / "training" / "configs").glob("*.yaml")
               if "official" in p.read_text()]
    assert configs
    result = run_cli("gate", "check", configs[0], "--dry-run")  # every row printed, and what is missing last
    assert result.returncode in (1, 3) and "Traceback" not in result.stderr, result.stderr[-500:]
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("not judged: this machine lacks") and "alfworld-download" in last
    report = json.loads(run_cli("gate", "check", configs[0], "--dry-run", "--json").stdout)
    assert "alfworld-download" in report["missing"] and report["exit_code"] == result.returncode


@pytest.mark.slow
@pytest.mark.alfworld
def test_ctrl_c_prints_the_exact_resume_command(tmp_path, game_cache):
    import signal
    import subprocess
    import sys

    from conftest import ROOT

    out = tmp_path / "run"
    # A shell starts its background jobs with SIGINT ignored, children inherit it, and Python then installs
    # no KeyboardInterrupt handler: this suite run as a background job saw the eval play to its end and
    # exit 0 (stops 77-80, measured: SIGINT's disposition there was SIG_IGN). The child gets the one a
    # terminal's foreground job has.
    job = subprocess.Popen([sys.executable, "-m", "skillos", "eval", str(ROOT / "evals" / "configs" / "quickstart.yaml"),
                            "--n-games", "32", "--n-train-games", "8", "--out", str(out)], start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, "SKILLOS_CACHE": str(game_cache)},
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # interrupted at its first progress line, with 8 train games and 2 x 32 eval games still to play
    seen = []
    for text in job.stderr:
        seen.append(text)
        if " games: " in text:
            break
    os.killpg(job.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends: the whole group
    _, rest = job.communicate(timeout=120)
    stderr = "".join(seen) + rest
    assert job.returncode == 130 and "Traceback" not in stderr, stderr[-2000:]
    line = stderr.strip().splitlines()[-1]
    assert line.startswith("interrupted; continue with: skillos eval ") and line.endswith("--resume")
    assert f"--out {out}" in line
