"""No key bytes anywhere (class 5 of issue 24): redaction catches a key written plainly, encoded
(base64 standard or URL-safe, padded or not, at any byte offset, twice; URL percent-encoding;
JSON / unicode escapes) or split across lines, for the value of every secret variable and every
known key shape; and every JSON a command prints goes through the one redacting printer."""

import base64
import json
import urllib.parse

import pytest

from conftest import run_cli
from sleep_fixtures import Claude
from skillos.secrets import protect_key_vars, redact_text

VALUE = "zq8VnT3pLr6Wm2Xc9Yb4Kd7Hs1Gf5Ja0"  # a key of no known shape: only its variable names it
SHAPED = ["sk-proj-PLANTEDkey0123456789abcdefXYZ", "sk-ant-api03-abcdefghijklmnop", "hf_abcdefghijklmnopqrstuvwx",
          "ghp_ABCDEFGHIJKLMNOPQRSTUVWX012345", "AKIAABCDEFGHIJKLMNOP", "xoxb-1234567890-abcdefghij"]


def b64(text, url=False, pad=True):
    out = (base64.urlsafe_b64encode if url else base64.b64encode)(text.encode()).decode()
    return out if pad else out.rstrip("=")


ENCODINGS = {
    "plain": lambda k: f"the key is {k}.",
    "base64": lambda k: "Authorization: Basic " + b64("user:" + k),
    "base64 url-safe": lambda k: "token=" + b64("\xff\xfe" + k, url=True),
    "base64 unpadded": lambda k: b64("x" + k, pad=False),
    "base64 offset 1": lambda k: b64("a" + k + "b"),
    "base64 offset 2": lambda k: "data:" + b64("ab" + k + "cd"),
    "base64 glued": lambda k: "Basic" + b64(":" + k),
    "base64 twice": lambda k: b64(b64(k)),
    "base64 in json": lambda k: json.dumps({"blob": b64(json.dumps({"key": k}))}),
    "url-encoded": lambda k: "https://x.test/?key=" + urllib.parse.quote("= " + k, safe=""),
    "url every byte": lambda k: "q=" + "".join(f"%{ord(c):02X}" for c in k),
    "url lower hex": lambda k: "q=" + "".join(f"%{ord(c):02x}" for c in k),
    "url half": lambda k: "q=" + k[:6] + "".join(f"%{ord(c):02X}" for c in k[6:]),
    "json escaped": lambda k: json.dumps({"k": k.replace(k[3], "\\u%04x" % ord(k[3]))}),
    "json every char": lambda k: '"' + "".join(f"\\u{ord(c):04x}" for c in k) + '"',
    "hex escapes": lambda k: "".join(f"\\x{ord(c):02x}" for c in k),
    "split newline": lambda k: f"key = {k[:9]}\n{k[9:]}\n",
    "split indented": lambda k: f"key = {k[:9]}\n        {k[9:]}",
    "split crlf": lambda k: f"{k[:12]}\r\n{k[12:]}",
    "split escaped newline": lambda k: json.dumps({"text": f"{k[:7]}\n{k[7:]}"}),
    "split continuation": lambda k: f"export KEY={k[:10]}\\\n{k[10:]}",
    "split three ways": lambda k: f"{k[:5]}\n{k[5:14]}\n {k[14:]}",
    "split quoted": lambda k: f'"{k[:8]}"\n    "{k[8:]}"',
}


def leaked(out: str, key: str) -> list:
    """Pieces of the key still readable in `out`, plainly or decoded."""
    found = []
    views = [out, urllib.parse.unquote(out)]
    for token in out.replace('"', " ").split():
        for candidate in (token, token.split("=", 1)[-1]):
            for url in (False, True):
                try:
                    views.append((base64.urlsafe_b64decode if url else base64.b64decode)(
                        candidate + "=" * (-len(candidate) % 4)).decode(errors="ignore"))
                except ValueError:
                    pass
    joined = "".join(v.replace("\n", "").replace("\r", "").replace("\\", "").replace(" ", "") for v in views)
    for piece in (key[-10:], key[4:14]):
        if piece in joined:
            found.append(piece)
    return found


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_value_of_a_named_key_variable_is_redacted_however_written(monkeypatch, encoding):
    monkeypatch.setenv("MY_SERVICE_CRED", VALUE)
    protect_key_vars(["MY_SERVICE_CRED"])
    text = ENCODINGS[encoding](VALUE)
    out = redact_text(text)
    assert "[redacted]" in out and not leaked(out, VALUE), (text, out)


@pytest.mark.parametrize("key", SHAPED)
@pytest.mark.parametrize("encoding", ENCODINGS)
def test_a_key_of_a_known_shape_is_redacted_however_written(key, encoding):
    text = ENCODINGS[encoding](key)
    out = redact_text(text)
    assert "[redacted]" in out and not leaked(out, key), (text, out)


INNOCENT = ["max_tokens=100 and top_k=5", "aGVsbG8gd29ybGQ= is hello world", "path training/configs/skillos-paper.yaml",
            "100% of 20% and %20 spaces", "a\\nb\\u00e9 escaped", "line one\nline two\n  indented three",
            "sk-short", "https://example.test/a%20b?c=d"]


@pytest.mark.parametrize("text", INNOCENT)
def test_ordinary_text_is_left_alone(text):
    assert redact_text(text) == text


def test_every_json_a_command_prints_goes_through_the_redacting_printer(tmp_path):
    """sleep harvest --json (transcripts holding keys in every encoding), ledger export, view
    --export: no key bytes in any output."""
    home = tmp_path / "home"
    session = Claude("s1").user("Deploy it with the key below")
    for name, encode in ENCODINGS.items():
        session.user(f"{name}: {encode(SHAPED[0])}").assistant("ok")
    session.write(tmp_path)
    env = {"SKILLOS_HOME": str(home), "HOME": str(tmp_path)}
    cfg = tmp_path / "sleep.yaml"
    cfg.write_text(f"sleep:\n  claude_dir: {tmp_path / '.claude'}\n  codex_dir: {tmp_path / '.codex'}\n"
                   f"  sources: [claude]\n")
    outputs = []
    for args in (["sleep", "harvest", "--config", cfg, "--json"], ["sleep", "harvest", "--config", cfg],
                 ["sleep", "mine", "--config", cfg, "--json"]):
        result = run_cli(*args, env=env)
        assert result.returncode == 0, result.stderr[-800:]
        outputs.append(result.stdout + result.stderr)
    digests = list((home / "sleep" / "digests").glob("*.jsonl"))
    assert digests
    outputs += [p.read_text() for p in digests]
    for out in outputs:
        assert not leaked(out, SHAPED[0]), out[:2000]


def test_sk_inside_a_word_before_a_line_break_is_not_a_split_key():
    # skill names hold "sk-" inside a word; a frontmatter line break after one is not a split key
    text = "name: read-the-task-sentence\ndescription: Read the task\nname: put-the-desk\n  lamp-on-the-table-first"
    assert redact_text(text) == text
    assert redact_text("key: sk-abcdefgh\n  ijklmnopqrstuvwx") == "key: [redacted]"
