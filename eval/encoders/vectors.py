"""Text encoders as plain callables, the TF-IDF fallback, and cosine similarity between their vectors.

An encoder is any ``encode(texts: list[str]) -> array (len(texts), d)``: a sentence-embedding
endpoint, a stub in a test, or ``tfidf_char_ngrams`` when no embedding model is at hand. Callers
never assume an encoder normalises its vectors; ``unit_rows`` does it once, here.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np

from eval._checks import require_int, require_str_sequence

Encoder = Callable[[list[str]], np.ndarray]


def tfidf_encoder_name(n: tuple[int, int] = (1, 2)) -> str:
    """The provenance name of ``tfidf_char_ngrams`` with n-gram sizes ``n``, e.g. ``tfidf-char-1-2``."""
    return f"tfidf-char-{n[0]}-{n[1]}"


def tfidf_char_ngrams(texts: Sequence[str], n: tuple[int, int] = (1, 2)) -> np.ndarray:
    """Character n-gram TF-IDF vectors, L2-normalised: the fallback when no sentence encoder is given.

    Grams are every substring of length n[0]..n[1] (inclusive); for N texts,

        idf(g) = ln((1 + N) / (1 + df(g))) + 1          (df = number of texts containing g)
        w(t, g) = count(g in t) · idf(g),   row t scaled to unit L2 norm (a gram-less row stays 0)

    Columns are the grams in sorted order, so the output is the same on every machine. The
    vectors depend on the whole batch through df: encode a label set in one call, and never cache
    these vectors per text. Characters, not words, because Chinese clinical labels share meaning
    through shared characters (肝郁脾虚 / 肝郁气滞); it sees no synonym written with other characters.
    """
    require_str_sequence("texts", texts)
    low = require_int("n[0]", n[0], minimum=1)
    high = require_int("n[1]", n[1], minimum=low)
    counts = [
        Counter(text[i : i + size] for size in range(low, high + 1) for i in range(len(text) - size + 1))
        for text in texts
    ]
    vocabulary = {gram: column for column, gram in enumerate(sorted(set().union(*counts)))}
    matrix = np.zeros((len(texts), len(vocabulary)))
    for row, text_counts in enumerate(counts):
        for gram, count in text_counts.items():
            matrix[row, vocabulary[gram]] = count
    if matrix.size:
        df = (matrix > 0).sum(axis=0)
        matrix *= np.log((1 + len(texts)) / (1 + df)) + 1
    return unit_rows(matrix)


def checked_vectors(vectors: object, n_texts: int, encoder_name: str) -> np.ndarray:
    """An encoder's output as a float array (n_texts, d), or ValueError naming the encoder and the defect."""
    try:
        array = np.asarray(vectors, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"encoder {encoder_name!r} returned something that is not a numeric array: {exc}") from None
    if array.ndim != 2 or array.shape[0] != n_texts:
        raise ValueError(
            f"encoder {encoder_name!r} returned shape {array.shape} for {n_texts} texts; expected ({n_texts}, d)"
        )
    if not np.isfinite(array).all():
        raise ValueError(f"encoder {encoder_name!r} returned NaN or infinite values")
    return array


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Each row divided by its L2 norm; an all-zero row stays zero (its cosine with anything is 0)."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix, dtype=float), where=norms > 0)


def cosine_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a_i, b_j) = a_i·b_j / (‖a_i‖‖b_j‖) for every pair, as an (len(a), len(b)) array; 0 for a zero vector.

    Clipped to [-1, 1], since rounding can put a vector's cosine with itself at 1 + 1e-16.
    """
    if a.shape[1:] != b.shape[1:]:
        raise ValueError(f"vectors of different dimensions: {a.shape[1:]} and {b.shape[1:]}")
    return np.clip(unit_rows(a) @ unit_rows(b).T, -1.0, 1.0)


def rounded(value: float, places: int = 6) -> float:
    """A cosine rounded to ``places`` decimals: what is compared, ranked and recorded, so that last-bit
    differences between BLAS builds cannot reorder near-ties or move a value across a band edge."""
    return round(float(value), places) + 0.0 if math.isfinite(value) else float(value)
