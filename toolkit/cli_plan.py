"""`skillos plan` (an agent proposes) and `skillos approve` (a person approves, at a terminal):
approval before compute. A launch that spends GPUs is refused by the `approved-plan` gate check
unless its plan hash has an approved plan (toolkit/gates/approval.py)."""

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
    """A person's step: read the plan, type the code shown, and it is approved (recorded in the
    ledger with who, when, the terminal and the process ancestry). Every number shown is computed
    again from the config, never read from the plan file; a file that shows other numbers is
    refused. Needs an interactive terminal outside any coding agent."""
    import secrets

    from skillos import api
    from skillos.cli_render import plan_lines
    from skillos.gates import approval
    from skillos.ledger import Ledger
    from skillos.safety import MAX_DOC_BYTES, parse_json, read_text

    text = read_text(plan, MAX_DOC_BYTES, "plan")
    try:
        proposal = parse_json(text)
        config, sets = proposal["config"], list(proposal.get("sets") or [])
        version = proposal["plan"]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise SkillosError(f"{plan}: not a plan written by `skillos plan` ({type(exc).__name__}: {exc})") from None
    if version != approval.PLAN_VERSION:
        raise SkillosError(f"{plan}: a plan of format {version!r}, this skillos writes {approval.PLAN_VERSION}; "
                           "write the plan again with `skillos plan`")
    if not isinstance(config, str) or not config or not Path(config).is_file():
        raise SkillosError(f"{plan}: its config {config} is not there; approve a plan where its config is")
    computed = api.proposal(api.load(config, sets), config, sets, proposal.get("proposed_by"))
    hashes = ("config_hash", "plan_hash")
    if any(proposal.get(key) != computed[key] for key in hashes):
        now, then = (", ".join(f"{k.replace('_', ' ')} {str(p.get(k))[:16]}" for k in hashes) for p in (computed, proposal))
        raise SkillosError(f"{plan}: {config} changed since the plan was written ({now}; the plan's {then}); "
                           "write the plan again")
    differ = approval.differences(proposal, computed)
    if differ:
        raise SkillosError(f"{plan}: the file shows {len(differ)} value(s) its config does not give ({differ[0]}): "
                           "it was edited after `skillos plan` wrote it; write the plan again")
    code = secrets.token_hex(4)  # drawn now, shown only here: nothing on disk tells it in advance
    seen = person_confirms("approve this plan", code, plan_lines(computed))
    shown = approval.plan_text(computed)
    with Ledger() as ledger:
        row_id = ledger.add_approval(computed["plan_hash"], hashlib.sha256(shown.encode()).hexdigest(), computed,
                                     seen["user"], seen)
        row = ledger.row("approvals", row_id)
    emit(row, False, lambda r: [f"plan {r['plan_sha256'][:8]} approved by {r['actor']} at {r['created_at']}: "
                                f"launches of plan hash {r['config_hash']} pass the approved-plan check"])
