"""What a run is asked to do: :class:`RunSpec`, and the options stored with a run for ``resume``.

A spec's fields carry the CLI's names (``--no-judge`` is ``no_judge``), so a user who knows one
knows the other. The result-shaping fields (:data:`PLAN_OPTIONS`) are stored with the run's plan;
a resume reuses them, and asking a resume for a different value is an error rather than a silent
merge, so a run's numbers always come from one set of options.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pool.items_source import DataError
from pool.live.questions import LiveRequest
from pool.selection import split_values
from pool.store.run_store import RUN_DB_FILENAME, RunStore
from routing.nights.gate.detectable import DEFAULT_MIN_DROP

DEFAULT_POOL = "model_pool.yaml"
EXECUTORS = ("local", "ray")
DEFAULT_CACHE_MAX_AGE_S = 12 * 3600.0  # a nightly run asks again for answers cached the night before
_NONE = type(None)


@dataclass(frozen=True)
class _Stored:
    """How a :class:`RunSpec` field is stored with the run's plan (see :func:`_stored`)."""

    types: tuple[type, ...]
    listed: bool
    rescore: bool


_STORED = "medpool.stored"  # the field metadata key


def _stored(default: Any, types: tuple[type, ...], *, listed: bool = False, rescore: bool = False) -> Any:
    """A RunSpec field stored with the run's plan, so that a resume rebuilds exactly the same plan and
    scores it the same way. ``types``: what the stored value must be (a damaged or foreign store is
    refused, not half-used); ``listed``: a selection that takes a comma list (or, from the API, a list),
    stored as one comma string, so runs stored with a single name (a plain string) still load and
    resume; ``rescore``: a rescore may change it (how answers are scored, never what was asked)."""
    return field(default=default, metadata={_STORED: _Stored(types, listed, rescore)})


def option_flags(names: tuple[str, ...]) -> str:
    """``--pool, --no-judge and --hallu``: option names as the CLI spells them, for help and messages."""
    flags = ["--" + name.replace("_", "-") for name in names]
    return flags[0] if len(flags) == 1 else ", ".join(flags[:-1]) + " and " + flags[-1]


@dataclass(frozen=True)
class RunSpec:
    """One run, as the CLI's flags describe it (see ``python -m pool.run --help``).

    ``pool`` is a pool file, or a mapping with a pool file's content (written to the run folder as
    ``model_pool.yaml`` so that a resume finds it). ``models``, ``track``, ``task``, ``domain`` and
    ``id`` take a list or the CLI's comma-separated (``id``: also repeated) form. ``executor`` is
    ``"local"`` (asyncio lanes in this process) or ``"ray"`` (one actor per backend lane;
    ``ray_address`` as for ``ray.init``, e.g. ``"auto"``). The fields declared with :func:`_stored` are
    the run's stored options (:data:`PLAN_OPTIONS`, :data:`RESCORE_OPTIONS`, :data:`LIST_OPTIONS`).
    ``live`` makes it a live run (:mod:`pool.live`): the pool's ``reference_agent:`` answers its questions
    and the answers are the run's data (``data`` then names the suites the domains are inferred from).
    """

    pool: str | Path | Mapping[str, Any] | None = _stored(None, (str,), rescore=True)
    data: Sequence[str | Path] | None = _stored(None, (list, _NONE))
    models: str | Sequence[str] | None = _stored(None, (str, _NONE))
    all: bool = _stored(False, (bool,))
    limit: int | None = _stored(None, (int, _NONE))
    track: str | Sequence[str] | None = _stored(None, (str, _NONE), listed=True)
    task: str | Sequence[str] | None = _stored(None, (str, _NONE), listed=True)
    domain: str | Sequence[str] | None = _stored(None, (str, _NONE), listed=True)
    id: Sequence[str] | None = _stored(None, (list, _NONE))
    sample: int | None = _stored(None, (int, _NONE))
    subset: str | None = _stored(None, (str, _NONE))
    orchestration: bool = _stored(False, (bool,))
    no_judge: bool = _stored(False, (bool,), rescore=True)
    hallu: bool = _stored(False, (bool,), rescore=True)
    no_routing: bool = _stored(False, (bool,), rescore=True)
    rejudge_sample: int | None = _stored(None, (int, _NONE), rescore=True)
    anchor_sample: int | None = _stored(None, (int, _NONE), rescore=True)
    # also send unlabelled cases (CHIP test set) as answer-only units
    answer_unlabelled: bool = _stored(False, (bool,))
    no_cache: bool = _stored(False, (bool,))
    cache_dir: str | Path | None = _stored(None, (str, _NONE))
    max_consecutive_failures: int = _stored(5, (int,))
    # adaptive scoring (pool.adaptive): new or named models answer only the most informative items
    adaptive: bool = _stored(False, (bool,))
    adaptive_budget: float = _stored(0.1, (float, int))
    adaptive_models: str | Sequence[str] | None = _stored(None, (str, _NONE), listed=True)
    adaptive_se: float = _stored(1.0, (float, int))
    # pairwise judging of the night's ties after scoring (pool.pairwise.stage); the pool's pairwise: block also asks
    pairwise: bool = _stored(False, (bool,), rescore=True)
    pairwise_budget: int | None = _stored(None, (int, _NONE), rescore=True)  # judge calls; implies pairwise
    out: str | Path | None = None
    executor: str | None = None
    ray_address: str | None = None
    log_interval: float = 30.0
    history_root: str | Path | None = None
    fail_on_regression: float | None = None
    min_drop: float = DEFAULT_MIN_DROP  # the drop the nightly comparison must be able to see (routing.nights.gate)
    fail_on_inconclusive: bool = False
    sequential: bool = False  # also the anytime-valid sequential gate across nights
    cache_max_age: float | None = _stored(DEFAULT_CACHE_MAX_AGE_S, (int, float, _NONE))
    max_cost: float | None = None
    max_tokens_total: int | None = None
    with_judge: bool = False  # rescore only: judge again a run that was started with no_judge
    # a live run: its questions, answered by the pool's reference_agent (pool.live); stored in RUN_DIR/live/
    live: LiveRequest | None = None

    def __post_init__(self) -> None:
        for name, minimum in (("limit", 1), ("sample", 1), ("rejudge_sample", 1), ("anchor_sample", 1)):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < minimum):
                raise DataError(f"{name}: must be an integer >= {minimum}, got {value!r}")
        value = self.max_consecutive_failures
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise DataError(f"max_consecutive_failures: must be an integer >= 0, got {value!r}")
        if (
            not isinstance(self.log_interval, (int, float))
            or not math.isfinite(self.log_interval)
            or self.log_interval <= 0
        ):
            raise DataError(f"log_interval: must be a finite number of seconds > 0, got {self.log_interval!r}")
        for name in ("cache_max_age", "max_cost"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0
            ):
                raise DataError(f"{name}: must be a finite number >= 0, got {value!r}")
        tokens = self.max_tokens_total
        if tokens is not None and (isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1):
            raise DataError(f"max_tokens_total: must be an integer >= 1, got {tokens!r}")
        threshold = self.fail_on_regression
        if threshold is not None and (
            isinstance(threshold, bool)
            or not isinstance(threshold, (int, float))
            or not math.isfinite(threshold)
            or not 0 <= threshold <= 1
        ):
            raise DataError(f"fail_on_regression: must be a score difference in [0, 1], got {threshold!r}")
        drop = self.min_drop
        if isinstance(drop, bool) or not isinstance(drop, (int, float)) or not 0 < drop <= 1:
            raise DataError(f"min_drop: must be a score difference in (0, 1], got {drop!r}")
        for name, low, high in (("adaptive_budget", 0.0, 1.0), ("adaptive_se", 0.0, 100.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value <= high:
                raise DataError(f"{name}: must be a number in ({low:g}, {high:g}], got {value!r}")
        if (self.adaptive_models is not None or self.adaptive_budget != 0.1) and not self.adaptive:
            raise DataError("--adaptive-budget / --adaptive-models without --adaptive: add --adaptive")
        budget = self.pairwise_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 0):
            raise DataError(f"pairwise_budget: must be an integer >= 0 (0: no limit), got {budget!r}")
        if self.no_judge and (self.pairwise or budget is not None):
            raise DataError("--pairwise with --no-judge: pairwise judging asks the judge; drop one of them")
        if self.live is not None and not isinstance(self.live, LiveRequest):
            raise DataError(f"live: expected a pool.live.questions.LiveRequest, got {type(self.live).__name__}")
        if self.executor is not None and self.executor not in EXECUTORS:
            raise DataError(f"executor: must be one of {', '.join(EXECUTORS)}, got {self.executor!r}")
        if isinstance(self.pool, str) and not self.pool.strip():
            raise DataError(
                "--pool is empty (an unset shell variable?); name a pool file, or drop --pool for ./model_pool.yaml"
            )
        for name in ("data", "id"):
            value = getattr(self, name)
            if isinstance(value, (str, Path)):
                raise DataError(f"{name}: expected a list, got the single value {str(value)!r}; pass [{str(value)!r}]")
        for name in LIST_OPTIONS:
            value = getattr(self, name)
            if (
                value is not None
                and not isinstance(value, str)
                and (not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value))
            ):
                raise DataError(f"{name}: expected a name, a comma list or a list of names, got {value!r}")
            if value is not None and not split_values(value):
                raise DataError(
                    f"--{name} {value!r} names nothing (an unset shell variable?); name at least one "
                    f"{name}, or drop --{name}"
                )

    def explicit(self) -> dict[str, Any]:
        """The result-shaping options given (values that differ from the defaults), in stored form."""
        defaults = RunSpec()
        return {
            name: _stored_form(name, getattr(self, name))
            for name in PLAN_OPTIONS
            if getattr(self, name) not in (None, False) and getattr(self, name) != getattr(defaults, name)
        }

    def new_run_options(self) -> tuple[dict[str, Any], Path]:
        """(options to store, run folder) for a new run; the pool path is resolved later when inline."""
        options = {name: _stored_form(name, getattr(self, name)) for name in PLAN_OPTIONS}
        if not isinstance(self.pool, Mapping):
            options["pool"] = str(Path(self.pool or DEFAULT_POOL).resolve())
        options["data"] = [str(Path(p).resolve()) for p in self.data] if self.data else None
        if self.cache_dir is not None:
            options["cache_dir"] = str(Path(self.cache_dir).expanduser().resolve())
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        return options, Path(self.out) if self.out else Path("runs") / stamp


# Every option stored with a run, in declaration order, and the ones a selection lists or a rescore may change.
_OPTIONS: dict[str, _Stored] = {f.name: f.metadata[_STORED] for f in fields(RunSpec) if _STORED in f.metadata}
PLAN_OPTIONS = tuple(_OPTIONS)
LIST_OPTIONS = tuple(name for name, option in _OPTIONS.items() if option.listed)
RESCORE_OPTIONS = tuple(name for name, option in _OPTIONS.items() if option.rescore)


def _stored_form(name: str, value: Any) -> Any:
    """Lists as lists; ``models``, ``track``, ``task`` and ``domain`` as the CLI's comma-separated
    string (a run stored with one plain name reads the same); paths as strings."""
    if name == "models" and value is not None and not isinstance(value, str):
        return ",".join(value)
    if name in LIST_OPTIONS and value is not None:
        return ",".join(split_values(value)) or None
    if name in ("data", "id") and value is not None:
        return [str(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if name == "pool" and isinstance(value, Mapping):
        return None
    return value


def stored_options(run_dir: Path) -> dict[str, Any]:
    """The options a run was started with, checked by type (a damaged store is refused)."""
    if not run_dir.is_dir() or not (run_dir / RUN_DB_FILENAME).is_file():
        raise DataError(f"{run_dir}: no {RUN_DB_FILENAME} there; pass the directory of an earlier run")
    with RunStore(run_dir, create=False) as store:
        runs = store.runs()
    where = run_dir / RUN_DB_FILENAME
    if len(runs) != 1:
        raise DataError(f"{where}: expected one run, found {len(runs)}; pass the folder of one run")
    options = dict(runs[0].options)
    defaults = RunSpec()
    for name in PLAN_OPTIONS:
        options.setdefault(name, _stored_form(name, getattr(defaults, name)))  # runs stored before an option existed
        value, wanted = options[name], _OPTIONS[name].types
        if (
            not isinstance(value, wanted)
            or (isinstance(value, bool) and bool not in wanted)
            or (isinstance(value, int) and not isinstance(value, bool) and value < 0)
        ):
            raise DataError(
                f"{where}: stored option {name!r} is {value!r}, not a valid value; the run store is "
                "damaged — start a new run with --out"
            )
    return options


def check_resume(spec: RunSpec, stored: Mapping[str, Any]) -> None:
    """A resume keeps the run's options; a flag that would change them is an error, not a silent merge."""
    if spec.out:
        raise DataError("--out with --resume: a resumed run stays in its own folder; drop --out")
    for name, value in spec.explicit().items():
        flag = "--" + name.replace("_", "-")
        if name in ("pool", "data"):
            raise DataError(
                f"{flag} with --resume: the run's own {name} is used (stored with its plan); "
                "start a new run with --out to use another"
            )
        if _stored_form(name, stored.get(name)) != value:
            raise DataError(
                f"{flag} {value!r} with --resume: this run was started with {stored.get(name)!r}, and a "
                "resume keeps the run's own options so its results stay comparable; "
                "drop the flag, or start a new run with --out"
            )


def rescore_options(spec: RunSpec, stored: Mapping[str, Any]) -> dict[str, Any]:
    """The stored options with what a rescore may change applied (pool, judging, routing)."""
    explicit = spec.explicit()
    fixed = sorted(set(explicit) - set(RESCORE_OPTIONS))
    if fixed or spec.out:
        flag = "--" + (fixed[0].replace("_", "-") if fixed else "out")
        raise DataError(
            f"{flag} with --rescore: a rescore scores the run's stored answers as they are "
            f"(its items, models and folder); only {option_flags(RESCORE_OPTIONS)} may change (and "
            "--with-judge judges a run started with --no-judge). Start a new run with --out for other "
            "items or models"
        )
    options = dict(stored)
    if spec.pool is not None:
        if isinstance(spec.pool, Mapping):
            raise DataError("pool: a rescore takes a pool file, not an inline pool; write it to a file")
        options["pool"] = str(Path(spec.pool).resolve())  # e.g. the same pool with another judge:
    options.update({k: v for k, v in explicit.items() if k in RESCORE_OPTIONS and k != "pool"})
    if spec.with_judge:
        if spec.no_judge:
            raise DataError("--with-judge with --no-judge: pick one")
        options["no_judge"] = False  # a run scored without its judge, now judged
    return options


def check_new_out(run_dir: Path) -> None:
    """Never write a run into a file, another run's folder or a folder of the user's files."""
    if run_dir.exists() and not run_dir.is_dir():
        raise DataError(f"--out {run_dir}: that is a file, not a folder; pass a new folder")
    if (run_dir / RUN_DB_FILENAME).exists():
        raise DataError(
            f"--out {run_dir}: already holds a run; finish it with --resume {run_dir}, or pass a new folder"
        )
    if run_dir.is_dir() and any(p.name != ".lock" for p in run_dir.iterdir()):
        raise DataError(
            f"--out {run_dir}: folder exists and is not empty; medpool will not overwrite its files, "
            "pass a new or empty folder"
        )


def spec_fields() -> tuple[str, ...]:
    return tuple(f.name for f in fields(RunSpec))
