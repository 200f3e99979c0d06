"""The pool's roster, as ``python -m pool.run --list [--all]`` prints it: who answers, where, and who judges.

Read from the pool file alone (no server, no key), so the roster can be checked before a night's
run. Without ``--all`` only enabled models are listed and a line says how many are disabled, so
a model switched off by mistake is still noticed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from pool.config import Model, PoolConfig, load_pool
from routing.screen.shortlist import read_shortlist


@dataclass(frozen=True)
class RosterRow:
    """One pool model: its name, the id sent to the server, its backend and that backend's type."""

    name: str
    model: str
    backend: str
    backend_type: str
    enabled: bool
    think: str


def think_shown(model: Model, backend_type: str) -> str:
    """``on``/``off``/a level when the model sets it (the pool file refuses ``think`` where a backend
    cannot send it); unset: ``default`` on Ollama, which leaves it to the server, else ``-``."""
    if model.think is None:
        return "default" if backend_type == "ollama" else "-"
    if isinstance(model.think, bool):
        return "on" if model.think else "off"
    return str(model.think)


def roster_rows(config: PoolConfig, include_disabled: bool) -> list[RosterRow]:
    """The pool's models in file order: every one with ``include_disabled``, else the enabled ones."""
    rows = []
    for model in config.models:
        if model.enabled or include_disabled:
            kind = config.backend_of(model).type
            rows.append(
                RosterRow(model.name, model.model, model.backend, kind, model.enabled, think_shown(model, kind))
            )
    return rows


def judge_lines(config: PoolConfig) -> list[str]:
    """Who judges: the one judge, a panel with its rule, or none (judged items then stay unscorable)."""
    judges = config.judge_models()
    if not judges:
        return ["judge: none (no judge: in the pool file; judged items are reported as unscorable)"]
    pool_names = {m.name for m in config.models}

    def shown(judge: Model) -> str:
        kind = config.backend_of(judge).type
        origin = "a pool model" if judge.name in pool_names else "inline"
        return f"{judge.name} ({origin}; backend {judge.backend} ({kind}), model id {judge.model})"

    if len(judges) == 1:
        return [f"judge: {shown(judges[0])}"]
    return [f"judges: a panel of {len(judges)}, rule {config.panel_rule}"] + [f"  {shown(j)}" for j in judges]


def roster_text(pool_file: str | os.PathLike[str], include_disabled: bool) -> str:
    """The roster as text; raises :class:`pool.config.PoolConfigError` for a bad pool file."""
    config = load_pool(pool_file)
    rows = roster_rows(config, include_disabled)
    disabled = sum(not m.enabled for m in config.models)
    header = ("name", "model id", "backend (type)", "enabled", "think")
    table = [header] + [
        (r.name, r.model, f"{r.backend} ({r.backend_type})", "yes" if r.enabled else "no", r.think) for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = [f"pool {pool_file}: {len(config.models)} model(s), {len(config.models) - disabled} enabled"]
    lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    if not rows:
        lines.append("  (no enabled model: set `enabled: true` on one, or list them all with --list --all)")
    if disabled and not include_disabled:
        lines.append(f"{disabled} disabled model(s) not listed; `--list --all` shows them")
    return "\n".join(lines + judge_lines(config))


def shortlisted_models(
    pool_file: str | os.PathLike[str], shortlist_file: str | os.PathLike[str], tier: str
) -> tuple[list[str], list[str]]:
    """``--from-shortlist``: (the pool's models among the shortlist's must-test ones — with ``tier="optional"``
    the optional ones too — in shortlist order; one warning per shortlisted model the pool lacks).

    Raises :class:`routing.screen.shortlist.ShortlistError` for a bad shortlist file and
    :class:`pool.config.PoolConfigError` for a bad pool file."""
    wanted = read_shortlist(shortlist_file).models(tier)
    names = {m.name for m in load_pool(pool_file).models}
    missing = [name for name in wanted if name not in names]
    warnings = [
        f"shortlisted model {name!r} ({shortlist_file}) is not in the pool {pool_file}; it is not run "
        "(add it to the pool file, or screen this pool again)"
        for name in missing
    ]
    return [name for name in wanted if name in names], warnings
