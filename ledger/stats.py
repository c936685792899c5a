"""Counts over the failure ledger: by category, mode, kind, status and detector, cost, and the
share documented. Retracted or invalidated failures are counted apart, never mixed in."""

from __future__ import annotations

from collections import Counter

from skillos.ledger import taxonomy

DOCUMENTED = "has at least one failure mode and names the gate that would have caught it"


def failure_stats(failures: list[dict]) -> dict:
    valid = [f for f in failures if f["valid"]]
    gpu = [f["cost_gpu_hours"] for f in valid if f["cost_gpu_hours"] is not None]
    wall = [f["cost_wall_hours"] for f in valid if f["cost_wall_hours"] is not None]
    documented = [f for f in valid if f["modes"] and f["gate"]]
    return {
        "failures": len(valid),
        "retracted_or_invalid": len(failures) - len(valid),
        "by_category": {c: n for c, n in Counter(f["category"] for f in valid).most_common()},
        "by_mode": {m: n for m, n in Counter(m for f in valid for m in f["modes"]).most_common()},
        "by_kind": dict(Counter(f["kind"] for f in valid)),
        "by_status": dict(Counter(f["status"] for f in valid)),
        "by_detector": dict(Counter(f["detected_by"] for f in valid)),
        "cost": {
            "gpu_hours": sum(gpu), "gpu_hours_measured_on": len(gpu),
            "wall_hours": sum(wall), "wall_hours_measured_on": len(wall),
            "of": len(valid),
        },
        "documented": {
            "n": len(documented), "of": len(valid),
            "share": len(documented) / len(valid) if valid else None,
            "definition": DOCUMENTED,
        },
        "categories_known": list(taxonomy.CATEGORIES),
    }
