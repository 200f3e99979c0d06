"""What the router knows, as immutable values: the run it learned from, and the state it serves.

:class:`RunKnowledge` is read once from the run folder: every scored item's question text (as the
pool's models received it, from ``run.sqlite``), its bucket path (from ``scores.jsonl``), every
model's score on it, the classifier fitted on all of them and its out-of-fold guesses (5 folds,
stratified by bucket), which the thresholds are chosen on.

:class:`RouterState` is one manifest in service: its sha256, its routes, the thresholds chosen for
it (:func:`routing.serve.routes.choose_thresholds` on the out-of-fold guesses and the run's scores),
and the upstream endpoint of every model it can send to. A reloaded manifest makes a new state; a
request keeps the state it started with, so a swap never changes a request halfway.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from pool.config import Model, PoolConfig
from pool.run_spec import stored_options
from routing.decide.validation import assign_folds
from routing.load.runs import load_runs
from routing.serve.classifier import BucketClassifier, BucketPath, out_of_fold_guesses
from routing.serve.routes import RouteTable, Thresholds, choose_thresholds, route_table
from routing.serve.texts import TextsError, item_texts
from routing.serve.validation import item_paths

MANIFEST_FILENAME = "routing_manifest.yaml"
INLINE_POOL_FILENAME = "model_pool.yaml"  # where pool.run writes a pool given inline
THRESHOLD_FOLDS = 5
CHAT_PATHS = {"openai": "/chat/completions", "vllm": "/chat/completions", "ollama": "/v1/chat/completions"}
FILLED_PARAMS = ("temperature", "max_tokens", "top_p", "seed", "stop")  # sent when the client leaves them out


class StateError(ValueError):
    """The router cannot start (or reload) on these files; the message names the file and the fix."""


@dataclass(frozen=True)
class RunKnowledge:
    run_dir: Path
    texts: tuple[str, ...]
    paths: tuple[BucketPath, ...]
    models: tuple[str, ...]
    scores: np.ndarray  # items × models, NaN where unscored
    classifier: BucketClassifier | None  # None: no question texts in the run (hints only)
    oof_labels: tuple[tuple[str, ...], ...]
    oof_confidence: np.ndarray
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Upstream:
    """One pool model the router can forward to. ``api_key_env`` names the variable; the key is read per request."""

    model: str  # the manifest's label (the pool name)
    url: str  # the chat completions URL
    model_id: str  # the id sent upstream
    api_key_env: str | None
    timeout_s: float
    max_response_bytes: int
    defaults: Mapping[str, Any] = field(default_factory=dict)
    replica_urls: tuple[str, ...] = ()  # a managed backend's replicas (``url`` is the first): taken in turn


@dataclass(frozen=True)
class RouterState:
    manifest_path: Path
    manifest_sha: str
    routes: RouteTable
    thresholds: Thresholds
    expected_score: float | None  # the chosen thresholds' mean routed score on out-of-fold guesses
    knowledge: RunKnowledge
    upstreams: Mapping[str, Upstream]
    notes: tuple[str, ...] = ()


def learn_run(run_dir: Path, neighbours: int = 10) -> RunKnowledge:
    """Read the run's items, buckets and scores and fit the classifier (see the module docstring)."""
    loaded = load_runs([run_dir])
    families, paths = item_paths(loaded.table, None)
    models = tuple(sorted({m for fam in families for m in fam.models}))
    column = {m: j for j, m in enumerate(models)}
    notes: list[str] = []
    try:
        texts = item_texts(run_dir)
    except TextsError as exc:
        texts = {}
        notes.append(f"no question texts ({exc}): requests without a bucket hint go to the default model")
    codes = [c for c in sorted(paths) if texts.get(loaded.table.items[c])]
    row_of = {}
    for fam in families:
        for row, code in enumerate(fam.items.tolist()):
            row_of[code] = (fam, row)
    scores = np.full((len(codes), len(models)), np.nan)
    for i, code in enumerate(codes):
        fam, row = row_of[code]
        scores[i, [column[m] for m in fam.models]] = fam.scores[row]
    item_text = tuple(texts[loaded.table.items[c]] for c in codes)
    item_path = tuple(paths[c] for c in codes)
    if not codes:
        return RunKnowledge(run_dir, (), (), models, scores, None, (), np.zeros((0, 3)), tuple(notes))
    strata = np.unique([p.bucket for p in item_path], return_inverse=True)[1]
    folds = assign_folds(strata, min(THRESHOLD_FOLDS, len(codes)), 0)
    labels, confidence = out_of_fold_guesses(item_text, item_path, folds, neighbours=neighbours)
    classifier = BucketClassifier.fit(item_text, item_path, neighbours=neighbours)
    return RunKnowledge(
        run_dir, item_text, item_path, models, scores, classifier, tuple(labels), confidence, tuple(notes)
    )


def pool_file_of_run(run_dir: Path, pool_file: Path | None) -> Path:
    """The pool file given, else the one the run was started with (its stored options)."""
    if pool_file is None:
        stored = stored_options(run_dir).get("pool")
        pool_file = Path(stored) if stored else run_dir / INLINE_POOL_FILENAME
    return pool_file


def pool_model(pool: PoolConfig, manifest: Mapping[str, Any], label: str) -> Model | None:
    """The pool model a manifest label stands for (same name, the same backend when the pool has it), or None."""
    info = (manifest.get("models") or {}).get(label) or {}
    name = str(info.get("name") or label)
    backend_name = (info.get("identity") or {}).get("backend")
    named = [m for m in pool.models if m.name == name]
    found = [m for m in named if m.backend == backend_name] or named  # another pool file may name backends otherwise
    return found[0] if found else None


def upstreams_of(
    pool: PoolConfig, manifest: Mapping[str, Any], wanted: set[str], managed: Mapping[str, Sequence[str]] | None = None
) -> tuple[dict[str, Upstream], list[str]]:
    """The upstream of every manifest model in ``wanted`` the router can forward chat to, and notes on the rest.

    ``managed``: the base URLs of each managed ``llamacpp`` backend the router started (one per
    replica); a managed model is served there, a managed backend not started is noted."""
    managed = managed or {}
    out: dict[str, Upstream] = {}
    notes: list[str] = []
    for label in sorted(wanted):
        model = pool_model(pool, manifest, label)
        if model is None:
            notes.append(
                f"model {label!r}: not in the pool file; requests routed there go to the next tied model or the default"
            )
            continue
        backend = pool.backend_of(model)
        if model.mode != "chat":
            notes.append(
                f"model {label!r}: a completion-mode model (it takes a raw prompt, not chat messages); "
                "the router cannot forward chat requests to it"
            )
            continue
        if backend.type not in CHAT_PATHS and backend.type != "llamacpp":
            notes.append(
                f"model {label!r}: a {backend.type} backend the router cannot forward chat requests to "
                "(serve it as an OpenAI-compatible server and name it type: openai)"
            )
            continue
        defaults = {p: getattr(model, p) for p in FILLED_PARAMS if getattr(model, p) not in (None, ())}
        filled = {k: list(v) if isinstance(v, tuple) else v for k, v in defaults.items()}
        if backend.type == "llamacpp":
            bases = tuple(managed.get(model.backend) or ())
            if not bases:
                notes.append(
                    f"model {label!r}: its managed llamacpp backend {model.backend!r} was not started with "
                    "the router (the manifest named it only after start); restart the router to serve it"
                )
                continue
            urls = tuple(base.rstrip("/") + "/chat/completions" for base in bases)
            out[label] = Upstream(
                label,
                urls[0],
                model.model,
                None,
                float(backend.timeout_s),
                int(backend.max_response_bytes),
                filled,
                urls if len(urls) > 1 else (),
            )
            continue
        out[label] = Upstream(
            label,
            backend.base_url.rstrip("/") + CHAT_PATHS[backend.type],
            model.model,
            backend.api_key_env,
            float(backend.timeout_s),
            int(backend.max_response_bytes),
            filled,
        )
    return out, notes


def read_manifest(path: Path) -> tuple[dict[str, Any], str]:
    """(manifest, sha256 of its bytes); StateError naming the file and line when it cannot be used."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise StateError(
            f"{path}: cannot read the routing manifest ({exc.strerror or exc}); build it with "
            "python -m routing.build --run RUN_DIR, or pass --manifest FILE"
        ) from None
    try:
        manifest = yaml.safe_load(raw.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        line = getattr(getattr(exc, "problem_mark", None), "line", None)
        where = f"{path}:{line + 1}" if line is not None else str(path)
        raise StateError(
            f"{where}: not a readable YAML routing manifest ({getattr(exc, 'problem', None) or exc})"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("kind") != "medpool-routing-manifest":
        raise StateError(
            f"{path}: field 'kind' is not medpool-routing-manifest; pass the routing_manifest.yaml "
            "that python -m routing.build writes"
        )
    for key in ("buckets", "default"):
        if not isinstance(manifest.get(key), dict):
            raise StateError(
                f"{path}: field {key!r} is missing or not a mapping; rebuild the manifest with routing.build"
            )
    return manifest, hashlib.sha256(raw).hexdigest()


def serve_state(
    knowledge: RunKnowledge,
    manifest_path: Path,
    pool: PoolConfig,
    self_urls: Sequence[str] = (),
    managed: Mapping[str, Sequence[str]] | None = None,
) -> RouterState:
    """The state serving the manifest at ``manifest_path``; ``self_urls``: the router's own URLs (never an
    upstream); ``managed``: the base URLs of the managed llama.cpp backends the router started."""
    manifest, sha = read_manifest(manifest_path)
    routes = route_table(manifest)
    upstreams, notes = upstreams_of(pool, manifest, routes.models(), managed)
    for label, upstream in list(upstreams.items()):
        if any(upstream.url.startswith(own) for own in self_urls):
            del upstreams[label]
            notes.append(f"model {label!r}: its endpoint is this router itself; never forwarded to (a loop)")
    if not upstreams:
        raise StateError(
            f"{manifest_path}: none of the manifest's models can be served from the pool file:\n  "
            + "\n  ".join(notes)
            + "\npass the pool file with their endpoints (--pool FILE)"
        )
    if routes.default.model is None:
        notes.append(f"{manifest_path}: the manifest has no default model; a question no bucket claims gets an error")
    thresholds, expected = Thresholds(), None
    if knowledge.classifier is not None:
        thresholds, expected = choose_thresholds(
            knowledge.oof_labels, knowledge.oof_confidence, routes, knowledge.scores, knowledge.models
        )
    return RouterState(
        manifest_path, sha, routes, thresholds, expected, knowledge, upstreams, tuple(knowledge.notes) + tuple(notes)
    )
