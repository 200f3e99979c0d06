"""Which bucket a question belongs to, with a confidence: k nearest neighbours over the run's own items.

Every training item carries its *path* — its finest routing bucket (``family/kind/name``: task,
specialty domain or orchestration skill), its specialty system bucket (``specialty/system/<s>``, or
``""`` outside specialty) and its family. A question is encoded, its k most similar training items
(cosine) vote with their similarity as weight (negative similarities count 0), and at each level

    share(label) = Σ weight of the neighbours with that label / Σ weight of all k neighbours

the guess is the label with the largest share and its *confidence* is that share (0 when no
neighbour is similar at all). A parent's share is the sum of its children's, so a question split
between two domains of one system is confident about the system. Ties go to the label sorted
first, so a guess is the same on every machine.

Encoders: the default is the character n-gram TF-IDF of :mod:`eval.encoders` (same grams, same
idf formula), fitted once on the training texts so that a single question is encoded against the
training vocabulary and idf (:class:`FittedTfidf`; a gram the training texts never had is ignored).
Any :data:`eval.encoders.Encoder` whose vectors do not depend on the batch (a sentence-embedding
endpoint) can be given instead.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from eval.encoders import Encoder, checked_vectors, unit_rows

LEVELS = ("bucket", "system", "family")  # finest bucket, specialty system bucket, family
DEFAULT_NEIGHBOURS = 10
NGRAMS = (1, 2)


@dataclass(frozen=True)
class BucketPath:
    """Where a training item sits: finest bucket id, system bucket id (``""`` outside specialty), family."""

    bucket: str
    system: str
    family: str

    def at(self, level: str) -> str:
        return getattr(self, level)


@dataclass(frozen=True)
class Guess:
    """The classifier's label and confidence at each level (``labels[i]`` goes with ``LEVELS[i]``)."""

    labels: tuple[str, str, str]
    confidences: tuple[float, float, float]


def _grams(text: str, n: tuple[int, int]) -> Counter[str]:
    return Counter(text[i : i + size] for size in range(n[0], n[1] + 1) for i in range(len(text) - size + 1))


@dataclass(frozen=True)
class FittedTfidf:
    """Character n-gram TF-IDF with the vocabulary and idf of the texts it was fitted on.

    idf(g) = ln((1 + N) / (1 + df(g))) + 1 over the N fitted texts, w(t, g) = count(g in t) · idf(g),
    rows scaled to unit L2 norm — :func:`eval.encoders.tfidf_char_ngrams`'s vectors for the fitted texts.
    """

    vocabulary: dict[str, int]
    idf: np.ndarray
    n: tuple[int, int] = NGRAMS

    @classmethod
    def fit(cls, texts: Sequence[str], n: tuple[int, int] = NGRAMS) -> tuple[FittedTfidf, sp.csr_matrix]:
        """The fitted encoder and the training texts' vectors (CSR, unit rows)."""
        counts = [_grams(text, n) for text in texts]
        vocabulary = {gram: column for column, gram in enumerate(sorted(set().union(*counts)))}
        raw = _csr(counts, vocabulary)
        df = np.bincount(raw.indices, minlength=len(vocabulary))
        idf = np.log((1 + len(texts)) / (1 + df)) + 1
        encoder = cls(vocabulary, idf, n)
        return encoder, _unit_csr(raw @ sp.diags(idf))

    def transform(self, texts: Sequence[str]) -> sp.csr_matrix:
        raw = _csr([_grams(text, self.n) for text in texts], self.vocabulary)
        return _unit_csr(raw @ sp.diags(self.idf))


def _csr(counts: Sequence[Counter[str]], vocabulary: dict[str, int]) -> sp.csr_matrix:
    indptr, indices, data = [0], [], []
    for text_counts in counts:
        for gram, count in text_counts.items():
            column = vocabulary.get(gram)
            if column is not None:
                indices.append(column)
                data.append(count)
        indptr.append(len(indices))
    return sp.csr_matrix(
        (np.asarray(data, dtype=float), np.asarray(indices, dtype=np.int64), np.asarray(indptr)),
        shape=(len(counts), len(vocabulary)),
    )


def _unit_csr(matrix: sp.spmatrix) -> sp.csr_matrix:
    matrix = sp.csr_matrix(matrix)
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
    return sp.csr_matrix(sp.diags(scale) @ matrix)


@dataclass(frozen=True)
class BucketClassifier:
    """A fitted classifier; :meth:`guess` one question, :meth:`guess_many` a batch (see the module docstring)."""

    tfidf: FittedTfidf | None  # None when ``encoder`` encodes
    encoder: Encoder | None
    vectors: sp.csr_matrix | np.ndarray  # training items, unit rows
    names: tuple[tuple[str, ...], ...]  # per level: label names, sorted
    codes: np.ndarray  # training items × levels: index into names[level]
    neighbours: int

    @classmethod
    def fit(
        cls,
        texts: Sequence[str],
        paths: Sequence[BucketPath],
        *,
        encoder: Encoder | None = None,
        neighbours: int = DEFAULT_NEIGHBOURS,
    ) -> BucketClassifier:
        if len(texts) != len(paths) or not texts:
            raise ValueError(
                f"need one path per text and at least one text, got {len(texts)} texts and {len(paths)} paths"
            )
        if encoder is None:
            tfidf, vectors = FittedTfidf.fit(texts)
        else:
            tfidf, vectors = None, unit_rows(checked_vectors(encoder(list(texts)), len(texts), "encoder"))
        names, codes = [], []
        for level in LEVELS:
            labels = [p.at(level) for p in paths]
            vocab = tuple(sorted(set(labels)))
            index = {name: i for i, name in enumerate(vocab)}
            names.append(vocab)
            codes.append([index[label] for label in labels])
        return cls(tfidf, encoder, vectors, tuple(names), np.asarray(codes, dtype=np.int64).T, max(1, neighbours))

    def encode(self, texts: Sequence[str]) -> sp.csr_matrix | np.ndarray:
        if self.tfidf is not None:
            return self.tfidf.transform(texts)
        assert self.encoder is not None
        return unit_rows(checked_vectors(self.encoder(list(texts)), len(texts), "encoder"))

    def guess_many(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """(label codes, confidences), each texts × levels; codes index ``names[level]``."""
        if not texts:
            return np.zeros((0, len(LEVELS)), dtype=np.int64), np.zeros((0, len(LEVELS)))
        sims = self.encode(texts) @ self.vectors.T
        sims = sims.toarray() if sp.issparse(sims) else np.asarray(sims)
        k = min(self.neighbours, sims.shape[1])
        top = (
            np.argpartition(-sims, k - 1, axis=1)[:, :k]
            if k < sims.shape[1]
            else np.tile(np.arange(k), (len(texts), 1))
        )
        weight = np.clip(np.take_along_axis(sims, top, axis=1), 0.0, None)
        total = weight.sum(axis=1)
        codes = np.zeros((len(texts), len(LEVELS)), dtype=np.int64)
        confidence = np.zeros((len(texts), len(LEVELS)))
        rows = np.repeat(np.arange(len(texts)), k)
        for j, names in enumerate(self.names):
            share = np.zeros((len(texts), len(names)))
            np.add.at(share, (rows, self.codes[top.ravel(), j]), weight.ravel())
            best = share.argmax(axis=1)  # the first (sorted) label among equal shares
            codes[:, j] = best
            confidence[:, j] = np.divide(
                share[np.arange(len(texts)), best], total, out=np.zeros(len(texts)), where=total > 0
            )
        return codes, confidence

    def guess(self, text: str) -> Guess:
        """One question's guess; the TF-IDF path is the served one, so it skips the batch machinery
        (the k-NN votes are the same as :meth:`guess_many`'s: a test checks it)."""
        if self.tfidf is None:
            codes, confidence = self.guess_many([text])
            return Guess(
                tuple(self.names[j][codes[0, j]] for j in range(len(LEVELS))),  # type: ignore[arg-type]
                tuple(float(c) for c in confidence[0]),
            )  # type: ignore[arg-type]
        vocabulary, by_gram = self.tfidf.vocabulary, self._by_gram
        found = [(vocabulary[g], c) for g, c in _grams(text, self.tfidf.n).items() if g in vocabulary]
        n_items = self.codes.shape[0]
        if not found:
            sims = np.zeros(n_items)
        else:
            columns = np.fromiter((col for col, _ in found), dtype=np.int64, count=len(found))
            weights = np.fromiter((c for _, c in found), dtype=float, count=len(found)) * self.tfidf.idf[columns]
            weights /= np.linalg.norm(weights)
            starts, ends = by_gram.indptr[columns], by_gram.indptr[columns + 1]
            lengths = ends - starts
            take = np.repeat(ends - lengths.cumsum(), lengths) + np.arange(lengths.sum())
            sims = np.bincount(
                by_gram.indices[take], weights=by_gram.data[take] * np.repeat(weights, lengths), minlength=n_items
            )
        k = min(self.neighbours, n_items)
        top = np.argpartition(-sims, k - 1)[:k] if k < n_items else np.arange(n_items)
        weight = np.clip(sims[top], 0.0, None)
        total = float(weight.sum())
        labels, confidences = [], []
        for j, names in enumerate(self.names):
            share = np.bincount(self.codes[top, j], weights=weight, minlength=len(names))
            best = int(share.argmax())
            labels.append(names[best])
            confidences.append(float(share[best]) / total if total > 0 else 0.0)
        return Guess(tuple(labels), tuple(confidences))  # type: ignore[arg-type]

    @functools.cached_property
    def _by_gram(self) -> sp.csr_matrix:
        """The training vectors transposed (gram × item, CSR): a question's grams pick their rows."""
        return sp.csr_matrix(self.vectors.T)


def out_of_fold_guesses(
    texts: Sequence[str],
    paths: Sequence[BucketPath],
    folds: np.ndarray,
    *,
    encoder: Encoder | None = None,
    neighbours: int = DEFAULT_NEIGHBOURS,
) -> tuple[list[tuple[str, ...]], np.ndarray]:
    """Each item's guess by a classifier fitted on the other folds: (labels per item, confidences items × levels).

    An item whose fold is the only one (nothing to train on) gets empty labels and confidence 0.
    """
    labels: list[tuple[str, ...]] = [("", "", "")] * len(texts)
    confidence = np.zeros((len(texts), len(LEVELS)))
    for fold in np.unique(folds):
        held = np.flatnonzero(folds == fold)
        train = np.flatnonzero(folds != fold)
        if not len(train):
            continue
        model = BucketClassifier.fit(
            [texts[i] for i in train], [paths[i] for i in train], encoder=encoder, neighbours=neighbours
        )
        codes, conf = model.guess_many([texts[i] for i in held])
        confidence[held] = conf
        for row, i in enumerate(held):
            labels[i] = tuple(model.names[j][codes[row, j]] for j in range(len(LEVELS)))
    return labels, confidence


def accuracy(labels: Sequence[tuple[str, ...]], paths: Sequence[BucketPath]) -> dict[str, float | None]:
    """Share of items whose guessed label equals the true one, per level (the system level over
    specialty items only)."""
    out: dict[str, float | None] = {}
    for j, level in enumerate(LEVELS):
        pairs = [
            (guess[j], path.at(level))
            for guess, path in zip(labels, paths, strict=False)
            if level != "system" or path.system
        ]
        out[level] = sum(g == t for g, t in pairs) / len(pairs) if pairs else None
    return out
