"""`skillos plan` (an agent proposes) and `skillos approve` (a person approves, at a terminal):
approval before compute. A launch that spends GPUs is refused by the `approved-plan` gate check
unless its config hash has an approved plan (toolkit/gates/approval.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import List, Optional

import typer

from skillos.cli_common import JSON, PLAN_OUT, SET, emit, load_config, person_confirms
from skillos.errors import SkillosError


def plan_cmd(
    config: Path = typer.Argument(..., help="Experiment or training config (YAML)."),
    out: Optional[Path] = PLAN_OUT,
    set_: List[str] = SET,
    as_json: bool = JSON,
):
    """Write the plan you propose: hypothesis, arms, seeds, metric, the MDE and the games it needs,
    the estimated cost and the config hash. Show it to the person; they approve it with
    `skillos approve PLAN` at their terminal. Spends nothing, records nothing."""
    from skillos import api
    from skillos.cli_render import plan_lines

    result = api.plan(load_config(config, set_), out=out, sets=list(set_))
    emit(result, as_json, lambda r: plan_lines(r["plan"]) + [
        f"plan written to {r['path']} (short hash {r['short_hash']}); a person approves it with "
        f"`skillos approve {r['path']}` at their terminal"])


def approve_cmd(plan: Path = typer.Argument(..., help="A plan file written by `skillos plan`.")):
    """A person's step: read the plan, type its short hash, and it is approved (recorded in the
    ledger with who and when). Needs an interactive terminal."""
    from skillos import api
    from skillos.cli_render import plan_lines
    from skillos.gates.approval import short_hash
    from skillos.ledger import Ledger
    from skillos.safety import MAX_DOC_BYTES, parse_json, read_text

    text = read_text(plan, MAX_DOC_BYTES, "plan")
    try:
        proposal = parse_json(text)
        digest, config = proposal["config_hash"], proposal["config"]
        lines = plan_lines(proposal)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise SkillosError(f"{plan}: not a plan written by `skillos plan` ({type(exc).__name__}: {exc})") from None
    if not config or not Path(config).is_file():
        raise SkillosError(f"{plan}: its config {config} is not there; approve a plan where its config is")
    now = api.load(config, proposal.get("sets") or []).hash()
    if now != digest:
        raise SkillosError(f"{plan}: {config} changed since the plan was written (config hash {now}, the plan's "
                           f"{digest}); write the plan again")
    code = short_hash(text)
    who = person_confirms("approve this plan", code, lines)
    with Ledger() as ledger:
        approval = ledger.add_approval(digest, hashlib.sha256(text.encode()).hexdigest(), proposal, who)
        row = ledger.row("approvals", approval)
    emit(row, False, lambda r: [f"plan {code} approved by {r['actor']} at {r['created_at']}: launches of "
                                f"config hash {r['config_hash']} pass the approved-plan check"])
