"""Counts over the failure ledger: by category, mode, kind, status and detector, cost, and the
share documented. Retracted or invalidated failures are counted apart, never mixed in."""

from __future__ import annotations

from collections import Counter

from skillos.ledger import taxonomy
from skillos.ledger.store import CURRENT_FAILURES

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


def failure_counts(ledger, condition: str = "1", args=()) -> dict:
    """`failure_stats(failures)` of the failures `condition` selects (a condition on
    store.CURRENT_FAILURES' columns; default: all), counted by SQLite in four grouped queries
    instead of one dict per failure: the same keys, numbers and order (Counter's: most_common
    by count, then first seen, i.e. the lowest id; a failure's modes in name order)."""
    def query(sql):
        cursor = ledger.db.cursor()
        cursor.row_factory = None  # plain tuples: the costs can be one row per failure
        return cursor.execute(f"{CURRENT_FAILURES} {sql}", list(args)).fetchall()

    with ledger.snapshot():
        groups = query("SELECT valid, category, kind, status, detected_by, count(*), min(id) FROM current_failures "
                       f"WHERE {condition} GROUP BY valid, category, kind, status, detected_by")
        modes = query("SELECT m.mode, count(*), min(f.id) FROM current_failures f JOIN failure_modes m "
                      f"ON m.failure_id = f.id WHERE ({condition}) AND f.valid GROUP BY m.mode")
        # the costs themselves, summed here in id order: sum() is then exactly failure_stats' sum
        costs = query("SELECT cost_gpu_hours, cost_wall_hours FROM current_failures "
                      f"WHERE ({condition}) AND valid AND (cost_gpu_hours IS NOT NULL OR cost_wall_hours IS NOT NULL) "
                      "ORDER BY id")
        (documented,), = query(f"SELECT count(*) FROM current_failures f WHERE ({condition}) AND f.valid "
                               "AND f.gate IS NOT NULL AND f.gate <> '' "
                               "AND EXISTS (SELECT 1 FROM failure_modes m WHERE m.failure_id = f.id)")
    valid = [g for g in groups if g[0]]

    def counted(column: int) -> dict:  # {value: (count, first id)} in first-seen order
        seen = {}
        for g in sorted(valid, key=lambda g: g[6]):
            n, first = seen.get(g[column], (0, g[6]))
            seen[g[column]] = (n + g[5], first)
        return seen

    def most_common(seen: dict) -> dict:
        return {k: n for k, (n, _) in sorted(seen.items(), key=lambda kv: (-kv[1][0], kv[1][1]))}

    n_valid = sum(g[5] for g in valid)
    gpu = [c[0] for c in costs if c[0] is not None]
    wall = [c[1] for c in costs if c[1] is not None]
    return {
        "failures": n_valid,
        "retracted_or_invalid": sum(g[5] for g in groups) - n_valid,
        "by_category": most_common(counted(1)),
        "by_mode": {m: n for m, n, _ in sorted(modes, key=lambda r: (-r[1], r[2], r[0]))},
        "by_kind": {k: n for k, (n, _) in counted(2).items()},
        "by_status": {k: n for k, (n, _) in counted(3).items()},
        "by_detector": {k: n for k, (n, _) in counted(4).items()},
        "cost": {
            "gpu_hours": sum(gpu), "gpu_hours_measured_on": len(gpu),
            "wall_hours": sum(wall), "wall_hours_measured_on": len(wall),
            "of": n_valid,
        },
        "documented": {
            "n": documented, "of": n_valid,
            "share": documented / n_valid if n_valid else None,
            "definition": DOCUMENTED,
        },
        "categories_known": list(taxonomy.CATEGORIES),
    }
