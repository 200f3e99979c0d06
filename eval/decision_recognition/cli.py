"""``python -m eval.decision_recognition SUITE... --labels LABELS --out FILE.jsonl``: write DR items.

Loads every item under SUITE (files or folders, through the loader registry), converts the
open-label and classification items with ``eval.decision_recognition.build_choice_items`` and
writes the DR items in medpool's own JSONL format (``eval/loaders/formats/medpool_jsonl.py``), which
``python -m pool.run --data FILE.jsonl`` reads back. LABELS is a UTF-8 text file, one label per
line (surrounding whitespace ignored, blank lines skipped); the label space is those labels plus
the golds of the converted items (``--closed-labels``: the labels alone).

The distractor band is ``--band-quantiles QLOW QHIGH`` (default 0.5 0.99): quantiles of the cosines
between all pairs of labels in the label space, resolved per run, so the same flags suit the TF-IDF
fallback and a sentence encoder alike; ``--band-abs LOW HIGH`` gives absolute cosines instead. The
summary and every item's ``meta["band"]`` record the band actually used.

The encoder is the embeddings endpoint given by ``--embeddings-url``/``--embeddings-model``
(vectors cached in ``--cache-dir``, default ``$MEDPOOL_CACHE_DIR`` or ``~/.cache/medpool``), else
the character n-gram TF-IDF fallback, which the summary says.

Exit status: 0 when at least one item was written; 1 when none could be converted (nothing is
written) or the embeddings endpoint failed; 2 on bad input — a broken suite or label file (named
path:line) or a bad flag (named).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from eval.decision_recognition.choices import DEFAULT_QUANTILES, LETTERS, Band, Problem, build_choice_items
from eval.encoders.cache import EmbeddingCache, cached_encoder
from eval.encoders.vectors import Encoder, tfidf_char_ngrams, tfidf_encoder_name
from eval.files import FolderError, atomic_write_text, make_folder, write_failed
from eval.items import Item
from eval.loaders import ItemFormatError, load_items
from eval.loaders.base import read_utf8
from eval.metrics.tcm.linglan import normalize_entity

MAX_LISTED_PROBLEMS = 20
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
_SUITE_NAME = re.compile(r"^[^/\s]+$")


class BadInput(ValueError):
    """A flag or file the user must fix; the message names it."""


class EncoderUnavailable(RuntimeError):
    """The embeddings endpoint failed for good; the message names the URL and the status."""


def read_labels(path: Path) -> tuple[list[str], int]:
    """(labels in file order, number of lines that repeat an earlier label after normalisation).

    A line that is nothing but punctuation is an ItemFormatError at path:line."""
    if not path.is_file():
        raise ItemFormatError(path, None, None, "no such label file", "give --labels a text file, one label per line")
    labels: list[str] = []
    seen: set[str] = set()
    duplicates = 0
    for number, line in enumerate(read_utf8(path).removeprefix("\ufeff").splitlines(), start=1):
        label = line.strip()
        if not label:
            continue
        key = normalize_entity(label)
        if not key:
            raise ItemFormatError(path, number, None, f"{label!r} is not a label (only punctuation)", "remove the line")
        duplicates += key in seen
        seen.add(key)
        labels.append(label)
    if not labels:
        raise ItemFormatError(path, None, None, "the label file has no labels", "write one label per line")
    return labels, duplicates


# (url, model, api_key_env) -> (encode, identity): how the CLI reaches an embeddings endpoint. eval
# makes no HTTP calls itself; ``python -m pool.decision_recognition`` passes the runners' client.
RemoteEncoder = Callable[[str, str, str | None], tuple[Encoder, str]]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m eval.decision_recognition",
        description="Convert open-label and classification items into single-choice decision-recognition items "
        "(K-1 distractors nearest to the gold inside a similarity band relative to the encoder) and write them as "
        "medpool JSONL.",
    )
    parser.add_argument("suite", nargs="+", type=Path, metavar="SUITE", help="item files or folders")
    parser.add_argument(
        "--labels",
        type=Path,
        required=True,
        help="label file: one label per line (UTF-8); the golds of the converted items join these labels "
        "in the label space unless --closed-labels",
    )
    parser.add_argument("--out", type=Path, required=True, help="output file, *.jsonl (overwritten atomically)")
    parser.add_argument("--k", type=int, default=4, help="options per item, gold included (2-26; default 4)")
    band = parser.add_mutually_exclusive_group()
    band.add_argument(
        "--band-quantiles",
        type=float,
        nargs=2,
        default=DEFAULT_QUANTILES,
        metavar=("QLOW", "QHIGH"),
        help="distractor band relative to the encoder: a distractor's cosine to the gold must lie between "
        "these quantiles (0-1) of the cosines of all label pairs in the label space, inclusive "
        f"(default {DEFAULT_QUANTILES[0]} {DEFAULT_QUANTILES[1]}: at least as close as the median pair, "
        "not among the closest 1%%)",
    )
    band.add_argument(
        "--band-abs",
        "--band",
        type=float,
        nargs=2,
        metavar=("LOW", "HIGH"),
        help="absolute cosine band instead (-1..1), inclusive; cosines differ between encoders, so a band "
        "for one gives nothing with another (--band is the same flag)",
    )
    parser.add_argument(
        "--closed-labels",
        action="store_true",
        help="label space = --labels only; a gold missing from it is reported as gold_not_in_labels "
        "(default: the golds of the converted items join the label space)",
    )
    parser.add_argument("--seed", type=int, default=0, help="option-order seed (default 0)")
    parser.add_argument("--suite-name", help="suite of the DR items (default: each source item's suite)")
    parser.add_argument(
        "--embeddings-url", help="OpenAI-compatible base URL with its /v1 prefix (default: TF-IDF fallback)"
    )
    parser.add_argument("--embeddings-model", help="model name sent to the embeddings endpoint")
    parser.add_argument("--api-key-env", help="NAME of the environment variable holding the endpoint's key")
    parser.add_argument(
        "--cache-dir", type=Path, help="embedding cache folder (default $MEDPOOL_CACHE_DIR or ~/.cache/medpool)"
    )
    return parser


def band_from_flags(args: argparse.Namespace) -> Band:
    """The Band asked for: ``--band-abs`` in cosines when given, else ``--band-quantiles``; BadInput naming the flag."""
    if args.band_abs is not None:
        low, high = args.band_abs
        if not -1.0 <= low <= high <= 1.0:
            raise BadInput(f"--band-abs must be LOW HIGH with -1 <= LOW <= HIGH <= 1, got {low} {high}")
        return Band.cosines(low, high)
    low, high = args.band_quantiles
    if not 0.0 <= low <= high <= 1.0:
        raise BadInput(f"--band-quantiles must be QLOW QHIGH with 0 <= QLOW <= QHIGH <= 1, got {low} {high}")
    return Band.quantiles(low, high)


def _check_flags(args: argparse.Namespace) -> None:
    if not 2 <= args.k <= len(LETTERS):
        raise BadInput(f"--k must be between 2 and {len(LETTERS)}, got {args.k}")
    if args.out.suffix != ".jsonl":
        raise BadInput(f"--out must end in .jsonl (the medpool JSONL loader reads only those), got {args.out}")
    out = args.out.resolve()
    for given in args.suite:
        root = given.resolve()
        if out == root or root in out.parents:
            raise BadInput(f"--out {args.out} lies in the input {given}; a later run would read it back as a suite")
    if args.suite_name is not None and not _SUITE_NAME.match(args.suite_name):
        raise BadInput(f"--suite-name must have no '/' or spaces, got {args.suite_name!r}")
    if (args.embeddings_url is None) != (args.embeddings_model is None):
        raise BadInput(
            "--embeddings-url and --embeddings-model go together: give both, or neither for the TF-IDF fallback"
        )
    if args.embeddings_url is not None and not re.match(r"^https?://[^\s/?#@]+(/[^\s?#]*)?$", args.embeddings_url):
        raise BadInput(
            "--embeddings-url must be http(s)://host[:port][/path] without spaces, user@, ?query or #fragment"
        )
    if args.api_key_env is not None:
        if args.embeddings_url is None:
            raise BadInput("--api-key-env needs --embeddings-url")
        if not _ENV_NAME.match(args.api_key_env):
            raise BadInput(
                "--api-key-env must be the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*), not a key"
            )


def _band_line(items: Sequence[Item]) -> list[str]:
    """The band the items were built with (one per run), as recorded in their meta."""
    if not items:
        return []
    band, size = items[0].meta["band"], items[0].meta["label_space_size"]
    low, high = band["cosines"]
    how = (
        "absolute"
        if band["quantiles"] is None
        else (f"quantiles {band['quantiles'][0]} {band['quantiles'][1]} of {band['label_pairs']} label-pair cosines")
    )
    return [f"band: cosine {low} to {high} ({how}); label space {size} label(s)"]


def _summary(items: Sequence[Item], problems: Sequence[Problem], sources: int, out: Path | None) -> list[str]:
    """Counts, the band used, problems by kind, and the first problems in full."""
    where = f"written to {out}" if out is not None else "converted, nothing written"
    lines = [
        f"decision recognition: {len(items)} item(s) {where}; "
        f"{len(problems)} problem(s) among {sources} source item(s)",
        *_band_line(items),
    ]
    for kind, count in sorted(Counter(problem.kind for problem in problems).items()):
        lines.append(f"  {kind}: {count}")
    lines += [f"  {problem}" for problem in problems[:MAX_LISTED_PROBLEMS]]
    if len(problems) > MAX_LISTED_PROBLEMS:
        lines.append(f"  ... and {len(problems) - MAX_LISTED_PROBLEMS} more")
    return lines


def main(argv: Sequence[str] | None = None, *, remote_encoder: RemoteEncoder | None = None) -> int:
    """The CLI; ``remote_encoder`` reaches an embeddings endpoint (without it, ``--embeddings-url`` is refused)."""
    args = _parser().parse_args(argv)
    try:
        _check_flags(args)
        if args.embeddings_url is not None and remote_encoder is None:
            raise BadInput("--embeddings-url needs an embeddings client: run python -m pool.decision_recognition")
        band = band_from_flags(args)
        labels, duplicates = read_labels(args.labels)
        loaded = load_items(args.suite)
    except (BadInput, ItemFormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"labels: {len(labels) - duplicates} distinct from {args.labels}"
        + (f" ({duplicates} duplicate line(s) ignored)" if duplicates else "")
    )
    cache: EmbeddingCache | None = None
    if args.embeddings_url is not None:
        assert remote_encoder is not None  # checked with the flags
        remote, encoder_name = remote_encoder(args.embeddings_url, args.embeddings_model, args.api_key_env)
        cache = EmbeddingCache(
            args.cache_dir or Path(os.environ.get("MEDPOOL_CACHE_DIR") or Path.home() / ".cache" / "medpool")
        )
        encode = cached_encoder(remote, encoder_name, cache)
        print(f"encoder: {encoder_name} (cache {cache.path})")
    else:
        encode, encoder_name = tfidf_char_ngrams, tfidf_encoder_name()
        print(
            f"encoder: {encoder_name} — TF-IDF fallback (character 1-2-grams), no --embeddings-url given"
            + ("; --cache-dir unused (TF-IDF vectors depend on the whole label set)" if args.cache_dir else "")
        )
    try:
        items, problems = build_choice_items(
            loaded.items,
            labels,
            encode,
            encoder_name=encoder_name,
            k=args.k,
            band=band,
            seed=args.seed,
            suite=args.suite_name,
            include_golds=not args.closed_labels,
        )
    except (EncoderUnavailable, ValueError) as exc:
        print(f"error: the encoder failed: {exc}", file=sys.stderr)
        return 1
    finally:
        if cache is not None:
            cache.close()
    if band.unit == "cosine" and any(problem.kind == "too_few_in_band" for problem in problems):
        print(
            "note: an absolute band suits one encoder only (TF-IDF cosines run far below a sentence encoder's); "
            "leave out --band-abs for the band relative to the encoder (--band-quantiles)"
        )
    if not items:
        print("\n".join(_summary(items, problems, len(loaded.items), None)))
        print("error: no item could be converted; nothing written", file=sys.stderr)
        return 1
    try:
        make_folder(args.out.parent, "--out")
        atomic_write_text(args.out, "".join(json.dumps(item.to_record(), ensure_ascii=False) + "\n" for item in items))
    except FolderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a full disk
        print(write_failed(str(args.out), exc), file=sys.stderr)
        return 1
    print("\n".join(_summary(items, problems, len(loaded.items), args.out)))
    return 0
