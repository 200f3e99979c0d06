"""Which routing decisions changed between two manifests (schema 2), and why.

A decision *changed* when its pick (``model``), who serves it (``served_by``, buckets only) or
whether it is ``decisive`` differs. The reason is the first that applies, in this order:

- ``new bucket`` / ``bucket gone``: the bucket exists in one manifest only;
- ``fell below min_n`` (or ``not routable: <reason>``, e.g. below ``--floor``): a bucket that was
  routable no longer is, and a parent now serves it; ``routable again``: the reverse;
- ``parent pick changed``: an unroutable bucket whose serving parent picked another model;
- ``new leader``: the leader (highest lower 95% bound, the reference of the paired tests) changed;
- ``now decisive`` / ``no longer decisive``: same leader, but it is now (no longer) significantly
  better than every other candidate;
- ``tie broken differently``: same leader and decisiveness, another pick among the tied
  (``chosen_by`` says how, e.g. ``parent_tie_break``).

Pure: two manifest dicts in, a list of changes out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DECISION_BLOCKS = ("default", "orchestrator")


def _decisions(manifest: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Every decision of a manifest by id: ``default``, ``orchestrator``, ``family/<f>`` and the bucket ids."""
    out: dict[str, Mapping[str, Any]] = {}
    for name in DECISION_BLOCKS:
        if isinstance(manifest.get(name), Mapping):
            out[name] = manifest[name]
    for family, decision in (manifest.get("families") or {}).items():
        if isinstance(decision, Mapping):
            out[f"family/{family}"] = decision
    for bucket_id, route in (manifest.get("buckets") or {}).items():
        if isinstance(route, Mapping):
            out[str(bucket_id)] = route
    return out


def _reason(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    was, now = before.get("routable", True), after.get("routable", True)
    if was and not now:
        why = (
            "fell below min_n"
            if after.get("insufficient_data")
            else f"not routable: {after.get('reason') or 'no eligible model'}"
        )
        return f"{why}; served by {after.get('served_by') or 'nobody'}"
    if now and not was:
        return "routable again (enough data)"
    if not now:
        return f"parent pick changed ({after.get('served_by') or 'nobody'} serves it)"
    if before.get("leader") != after.get("leader"):
        return f"new leader {after.get('leader') or 'none'} (was {before.get('leader') or 'none'})"
    if bool(before.get("decisive")) != bool(after.get("decisive")):
        return (
            "now decisive (leader significantly better than every other)"
            if after.get("decisive")
            else f"no longer decisive (tied: {', '.join(after.get('tied_top') or [])})"
        )
    how = after.get("chosen_by") or after.get("method") or "tie_rule"
    return f"tie broken differently ({how})"


def decision_changes(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{id, base_model, new_model, base_decisive, new_decisive, reason}]`` for every changed decision, in id order
    (``default`` and ``orchestrator`` first, then families, then buckets)."""
    before, after = _decisions(base), _decisions(new)
    order = {name: i for i, name in enumerate(DECISION_BLOCKS)}
    ids = sorted(
        before.keys() | after.keys(),
        key=lambda d: (order.get(d, len(order) + (0 if d.startswith("family/") else 1)), d),
    )
    changes = []
    for decision_id in ids:
        b, a = before.get(decision_id), after.get(decision_id)
        if b is None or a is None:
            reason = "new bucket" if b is None else "bucket gone"
        elif (b.get("model"), b.get("served_by"), bool(b.get("decisive"))) == (
            a.get("model"),
            a.get("served_by"),
            bool(a.get("decisive")),
        ):
            continue
        else:
            reason = _reason(b, a)
        changes.append(
            {
                "id": decision_id,
                "base_model": (b or {}).get("model"),
                "new_model": (a or {}).get("model"),
                "base_decisive": (b or {}).get("decisive"),
                "new_decisive": (a or {}).get("decisive"),
                "reason": reason,
            }
        )
    return changes
