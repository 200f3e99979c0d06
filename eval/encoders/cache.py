"""An on-disk cache of text embeddings keyed by (encoder identity, text), so a label set is embedded once.

One SQLite file, ``<cache_dir>/embeddings.sqlite``, table ``vectors(encoder, text, dim, vector)``
with primary key (encoder, text); vectors are little-endian float64 bytes. The encoder identity
must name everything that shapes a vector (model and endpoint, e.g. ``bge-m3@http://host/v1``):
two encoders under one name would read each other's vectors. Only per-text encoders belong here;
``tfidf_char_ngrams`` depends on the whole batch and must not be cached.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

import numpy as np

from eval.encoders.vectors import Encoder, checked_vectors

CACHE_FILENAME = "embeddings.sqlite"
_DTYPE = np.dtype("<f8")
_CHUNK = 500  # texts per SELECT: well under SQLite's bound-parameter limit


class EmbeddingCache:
    """The cache file under ``cache_dir`` (created on first use); use as a context manager or call close()."""

    def __init__(self, cache_dir: Path) -> None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = cache_dir / CACHE_FILENAME
        self._db = sqlite3.connect(self.path, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (encoder TEXT NOT NULL, text TEXT NOT NULL, dim INTEGER NOT NULL,"
            " vector BLOB NOT NULL, PRIMARY KEY (encoder, text))"
        )
        self._db.commit()

    def get(self, encoder: str, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached vectors of those ``texts`` that have one under ``encoder``."""
        found: dict[str, np.ndarray] = {}
        unique = list(dict.fromkeys(texts))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT text, dim, vector FROM vectors WHERE encoder = ? AND text IN ({marks})", (encoder, *chunk)
            )
            for text, dim, blob in rows:
                vector = np.frombuffer(blob, dtype=_DTYPE)
                if vector.shape != (dim,):
                    raise ValueError(
                        f"{self.path}: the cached vector of {text!r} under {encoder!r} is damaged; delete the file"
                    )
                found[text] = vector
        return found

    def put(self, encoder: str, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Store one vector per text (rows of ``vectors``) in one transaction; an existing entry is kept."""
        rows = [
            (encoder, text, int(vector.shape[0]), np.asarray(vector, dtype=_DTYPE).tobytes())
            for text, vector in zip(texts, vectors, strict=False)
        ]
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO vectors (encoder, text, dim, vector) VALUES (?, ?, ?, ?)", rows)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def cached_encoder(encode: Encoder, encoder_name: str, cache: EmbeddingCache) -> Encoder:
    """``encode`` behind the cache: only texts without a cached vector are sent, once each, in one call.

    Raises ValueError when vectors of different dimensions meet (the name now covers another model).
    """

    def encode_cached(texts: list[str]) -> np.ndarray:
        known = cache.get(encoder_name, texts)
        missing = [text for text in dict.fromkeys(texts) if text not in known]
        if missing:
            fresh = checked_vectors(encode(missing), len(missing), encoder_name)
            cache.put(encoder_name, missing, fresh)
            known.update(zip(missing, fresh, strict=True))
        dims = {known[text].shape[0] for text in texts}
        if len(dims) > 1:
            raise ValueError(
                f"encoder {encoder_name!r}: cached and new vectors differ in dimension {sorted(dims)}; "
                f"the name must identify one model — use a new name or delete {cache.path}"
            )
        return np.stack([known[text] for text in texts]) if texts else np.zeros((0, 0))

    return encode_cached
