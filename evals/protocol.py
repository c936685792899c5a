"""The frozen eval protocol (SkillGate): an eval spec pins what every row of a comparison must
share — the task set, the repeats, the seed, the prompt and tool-schema hashes and the skill
snapshot — and a comparison of rows whose pins differ is refused with a one-line reason.

Success over repeats is reported as pass@k (at least one of k plays succeeds) and pass^k (all k
succeed) with the unbiased estimators over n plays with c successes:
pass@k = 1 - C(n-c, k) / C(n, k), pass^k = C(c, k) / C(n, k), in two labelled forms: the
protocol's (SkillGate's frozen protocol counts an errored play in the denominator as a failure;
frozen-protocol comparisons use this form) and measured-only (errored plays left out; a task with
fewer than k measured plays is left out and counted). Paired statistics on success stay on
measured pairs (unmeasured is reported beside them, never scored).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from math import comb
from pathlib import Path

import yaml

from skillos.errors import SkillosError
from skillos.files import write_atomic

PINS = ("task_set", "repeats", "seed", "prompt_hash", "tool_schema_hash", "snapshot_hash")


@dataclass(frozen=True)
class EvalSpec:
    task_set: str  # hash of the sorted game content hashes
    repeats: int
    seed: int
    prompt_hash: str
    tool_schema_hash: str
    snapshot_hash: str

    def pins(self) -> dict:
        return asdict(self)


def digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def task_set_hash(games) -> str:
    return digest(sorted(g.content_hash for g in games))


def load_spec(path: str | Path) -> EvalSpec:
    """An eval spec file (YAML or JSON); a missing or extra pin is a one-line error."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise SkillosError(f"{path}: cannot read the eval spec ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise SkillosError(f"{path}: an eval spec is a mapping of {', '.join(PINS)}")
    missing = [p for p in PINS if data.get(p) in (None, "")]
    extra = sorted(set(data) - set(PINS))
    if missing or extra:
        raise SkillosError(f"{path}: eval spec " + (f"does not pin {', '.join(missing)}" if missing
                                                    else f"has unknown key {extra[0]!r}"))
    kinds = {f.name: f.type for f in fields(EvalSpec)}
    for key in PINS:
        want = int if kinds[key] in (int, "int") else str
        if not isinstance(data[key], want) or isinstance(data[key], bool):
            raise SkillosError(f"{path}: eval spec {key} must be {want.__name__}, got {data[key]!r}")
    return EvalSpec(**{k: data[k] for k in PINS})


def write_spec(spec: EvalSpec, path: str | Path) -> None:
    write_atomic(Path(path), yaml.safe_dump(spec.pins(), sort_keys=False))


def check_comparable(pinned_rows: dict[str, dict]) -> None:
    """Refuse to compare arms whose pins differ: `pinned_rows` is arm -> its pins."""
    arms = list(pinned_rows)
    for arm in arms[1:]:
        for key in PINS:
            a, b = pinned_rows[arms[0]].get(key), pinned_rows[arm].get(key)
            if a != b:
                raise SkillosError(f"refused: {arms[0]} and {arm} were run under different eval pins "
                                   f"({key}: {a} vs {b}); a comparison needs one frozen protocol")


def pass_at_k(n: int, c: int, k: int) -> float:
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    return comb(c, k) / comb(n, k)


PROTOCOL_FORM = ("SkillGate protocol: every play counts; an errored (unmeasured) play is a failure in the "
                 "denominator")
MEASURED_FORM = ("measured plays only: errored plays left out; a task with fewer than k measured plays is left "
                 "out and counted")


def pass_metrics(rows: list[dict], k: int) -> dict:
    """pass@k and pass^k over each game's repeats (rows: game_id, success True/False/None), in
    both forms, each labelled: `protocol` (SkillGate's frozen protocol: n = every play, an errored
    play a failure; what frozen-protocol comparisons use) and `measured_only` (errored plays left
    out, so a task with fewer than k measured plays is left out and counted)."""
    plays: dict[str, list] = {}
    for r in rows:
        plays.setdefault(r["game_id"], []).append(r["success"])
    errored = sum(o is None for outs in plays.values() for o in outs)
    protocol = _pass_form({g: [o is True for o in outs] for g, outs in plays.items()}, k, len(plays))
    measured = _pass_form({g: [bool(o) for o in outs if o is not None] for g, outs in plays.items()}, k, len(plays))
    return {"k": k, "protocol": {**protocol, "form": PROTOCOL_FORM, "errored_plays_as_failures": errored},
            "measured_only": {**measured, "form": MEASURED_FORM, "unmeasured_plays": errored}}


def _pass_form(outcomes: dict, k: int, of_tasks: int) -> dict:
    usable = {g: o for g, o in outcomes.items() if len(o) >= k}
    left_out = of_tasks - len(usable)
    if not usable:
        return {"pass_at_k": None, "pass_hat_k": None, "tasks": 0, "of_tasks": of_tasks, "tasks_left_out": left_out,
                "reason": f"no task has {k} plays in this form"}
    at = [pass_at_k(len(o), sum(o), k) for o in usable.values()]
    hat = [pass_hat_k(len(o), sum(o), k) for o in usable.values()]
    return {"pass_at_k": sum(at) / len(at), "pass_hat_k": sum(hat) / len(hat), "tasks": len(usable),
            "of_tasks": of_tasks, "tasks_left_out": left_out}


def pass_comparison(control: list[dict], treatment: list[dict]) -> list[dict]:
    """Two arms' pass@k / pass^k in the protocol's form (the frozen protocol's comparison), k = 1..
    the fewest repeats either arm played."""
    out = []
    for k, (a, b) in enumerate(zip(control, treatment), start=1):
        pa, pb = a["protocol"], b["protocol"]
        diff = {m: (pb[m] - pa[m]) if pa[m] is not None and pb[m] is not None else None
                for m in ("pass_at_k", "pass_hat_k")}
        out.append({"k": k, "form": PROTOCOL_FORM, "control": {m: pa[m] for m in diff},
                    "treatment": {m: pb[m] for m in diff}, "difference": diff})
    return out
