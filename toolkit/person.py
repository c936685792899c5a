"""A person's step (approving a plan, setting the goal): what it checks and what it records.

What the lock stops: a step run from a pipe, a script or a redirect (no terminal on stdin and
stdout); a step run inside a known coding agent's shell, found by the variables those agents set
in every command they run (AGENT_VARIABLES) or by an agent's executable among the process's
ancestors (AGENT_PROGRAMS); and a code an agent could know in advance (the code to type is drawn
fresh for each step and shown only on the terminal). What it cannot stop: a process that forges a
terminal outside an agent's process tree (a pty opened by a detached daemon, a terminal multiplexer
the agent drives, ssh to this machine) and types the code it reads off the screen. Such a step is
not refused; it is made visible instead: every person's step records its witness (the real login
of the process's user, the terminal device, the whole process ancestry with each command line,
any agent variable present, and which ancestor holds the terminal's master side), which `skillos
ledger approvals` and the postmortem show, flagging a terminal held by a program that is not a
terminal (python, node, script) or by no ancestor at all.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from skillos.secrets import redact_text

# Set by coding agents in every command they run (found in their sources and issue trackers):
# Claude Code, OpenAI Codex CLI (several, by version and sandbox), Gemini CLI, Cursor's agent,
# opencode, Amazon Q, and the AI_AGENT convention some agents follow.
AGENT_VARIABLES = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CODEX_SANDBOX", "CODEX_SANDBOX_NETWORK_DISABLED",
                   "CODEX_THREAD_ID", "CODEX_CI", "CODEX_SHELL", "CODEX_MANAGED_BY_NPM", "GEMINI_CLI", "CURSOR_AGENT",
                   "OPENCODE", "AI_AGENT")
AGENT_PREFIXES = ("CODEX_", "CLINE_")  # whole families of variables only an agent sets
# Executables of coding agents: one among the ancestors means the step runs under an agent.
AGENT_PROGRAMS = ("claude", "codex", "gemini", "cursor-agent", "opencode", "aider", "goose", "amp", "qchat",
                  "copilot", "cline")
MAX_ANCESTORS = 64


def agent_variables(environ=None) -> list[str]:
    """The agent variables set in this process's environment (names only: values may be secret)."""
    environ = os.environ if environ is None else environ
    return sorted(name for name in environ if name in AGENT_VARIABLES or name.startswith(AGENT_PREFIXES))


def ancestry(pid: int | None = None) -> list[dict]:
    """This process and its ancestors, nearest first: {pid, name, command} each, read from /proc
    (empty where there is no /proc)."""
    out, pid, seen = [], os.getpid() if pid is None else pid, set()
    while pid and pid not in seen and len(out) < MAX_ANCESTORS:
        seen.add(pid)
        proc = Path(f"/proc/{pid}")
        try:
            stat = (proc / "stat").read_text()
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            break
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        out.append({"pid": pid, "name": name, "command": redact_text(command)[:300]})
        pid = int(rest[1]) if len(rest) > 1 else 0
    return out


def agent_ancestors(chain: list[dict]) -> list[str]:
    """The agent programs among `chain` (an executable named like one in AGENT_PROGRAMS, run
    directly or by an interpreter such as node)."""
    found = []
    for proc in chain:
        words = proc["command"].split()[:3] or [proc["name"]]
        names = {Path(w).name.lower() for w in words} | {proc["name"].lower()}
        names |= {Path(w).parent.name.lower() for w in words if "/" in w}  # .../claude-code/cli.js
        hits = [a for a in AGENT_PROGRAMS if a in names or f"{a}-code" in names]
        if hits:
            found.append(f"{hits[0]} (pid {proc['pid']}: {proc['command'][:80] or proc['name']})")
    return found


# Programs that own a person's terminal (hold its pseudo-terminal master): terminal emulators,
# remote logins, multiplexers, editors' terminal hosts. Any other owner (python, node, script,
# expect) is a program driving the terminal, shown as suspect.
TERMINAL_HOSTS = ("sshd", "login", "mosh-server", "tmux", "tmux: server", "screen", "xterm", "uxterm", "urxvt",
                  "gnome-terminal-", "gnome-terminal-server", "konsole", "kitty", "alacritty", "wezterm-gui",
                  "foot", "st", "xfce4-terminal", "terminator", "tilix", "lxterminal", "mate-terminal",
                  "qterminal", "terminology", "ghostty", "rio", "warp", "iterm2", "terminal", "code", "cursor",
                  "zellij", "dtach", "abduco", "emacs", "vim", "nvim")


def terminal_owner(chain: list[dict]) -> dict:
    """The ancestor holding the pseudo-terminal master (/dev/ptmx) of this terminal, read from
    /proc: {pid, name, command} or None with `known` False when an ancestor's descriptors could not
    be read before one was found (another user's sshd: nothing to say), `known` True and None when
    every ancestor was read and none holds it (the terminal was opened outside this process tree)."""
    for proc in chain[1:]:
        fds = Path(f"/proc/{proc['pid']}/fd")
        try:
            links = [os.readlink(fd) for fd in fds.iterdir()]
        except OSError:
            return {"owner": None, "known": False}
        if "/dev/ptmx" in links:
            return {"owner": proc, "known": True}
    return {"owner": None, "known": bool(chain)}


def _hosts(proc: dict) -> bool:
    name = proc["name"].lower()
    return name in TERMINAL_HOSTS or "ptyhost" in proc["command"].lower()


def terminal() -> dict:
    """The terminal the step ran at: the device of stdin and stdout (None where there is none)."""
    def tty(stream):
        try:
            return os.ttyname(stream.fileno())
        except (OSError, AttributeError, ValueError):
            return None
    return {"stdin": tty(sys.stdin), "stdout": tty(sys.stdout), "TERM": os.environ.get("TERM")}


def login() -> dict:
    """Who: the real user of the process (not $LOGNAME or $USER, which any caller can set), and
    what those variables said."""
    import pwd

    try:
        real = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        real = str(os.getuid())
    return {"user": real, "uid": os.getuid(), "LOGNAME": os.environ.get("LOGNAME"), "USER": os.environ.get("USER")}


def witness() -> dict:
    """What a person's step records beside it: who, the terminal, the process ancestry, agent
    variables present, and the agents found among the ancestors."""
    chain = ancestry()
    return {**login(), "terminal": terminal(), "ancestry": chain, "agent_variables": agent_variables(),
            "agent_ancestors": agent_ancestors(chain), "terminal_owner": terminal_owner(chain)}


def refusal(step: str, seen: dict) -> str | None:
    """Why a person's step is refused where it runs (None: a terminal, and no agent found)."""
    if seen["agent_variables"]:
        return (f"{step}: refused; this shell belongs to a coding agent ({', '.join(seen['agent_variables'][:3])} "
                "set): a person runs it at their own terminal")
    if seen["agent_ancestors"]:
        return (f"{step}: refused; it runs under a coding agent ({seen['agent_ancestors'][0]}): a person runs it "
                "at their own terminal")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return f"{step}: refused; this is a person's step, taken at an interactive terminal"
    return None


def forged(seen) -> list[str]:
    """What in a recorded witness suggests the step was not a person's: agents, a missing terminal,
    a terminal owned by a program that is not a terminal (a pty a script opened), a login variable
    that disagrees with the real user (shown by the ledger and the postmortem)."""
    if not isinstance(seen, dict):
        return ["no witness recorded (a step from before skillos recorded one)"]

    def strings(value) -> list[str]:
        return [str(v) for v in value] if isinstance(value, list) else [] if value is None else [str(value)]

    out = [f"agent variable {v}" for v in strings(seen.get("agent_variables"))]
    out += [f"agent ancestor {a}" for a in strings(seen.get("agent_ancestors"))]
    term = seen.get("terminal") if isinstance(seen.get("terminal"), dict) else {}
    if not (term.get("stdin") and term.get("stdout")):
        out.append("no terminal device on stdin or stdout")
    owner = seen.get("terminal_owner") if isinstance(seen.get("terminal_owner"), dict) else {}
    proc = owner.get("owner")
    if isinstance(proc, dict) and isinstance(proc.get("name"), str) and not _hosts(
            {"name": proc["name"], "command": str(proc.get("command") or "")}):
        out.append(f"its terminal is held by {proc['name']} (pid {proc.get('pid')}), a program, not a terminal")
    elif owner.get("known") is True and proc is None:
        out.append("no ancestor holds its terminal: it was opened by a process outside its process tree")
    if seen.get("LOGNAME") not in (None, seen.get("user")):
        out.append(f"$LOGNAME {seen.get('LOGNAME')!r} is not the real user {seen.get('user')!r}")
    return out
