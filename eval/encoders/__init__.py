"""Text encoders: ``vectors`` (an encoder is any ``encode(texts) -> array``; the character-n-gram
TF-IDF fallback, unit rows and cosines) and ``cache`` (an on-disk SQLite cache of embeddings keyed
by encoder identity and text). Decision recognition and DTR-F1 by embedding use them; ``eval``
itself makes no HTTP call, so a remote encoder is handed in by the caller.
"""

from eval.encoders.cache import EmbeddingCache, cached_encoder
from eval.encoders.vectors import (
    Encoder,
    checked_vectors,
    cosine_matrix,
    rounded,
    tfidf_char_ngrams,
    tfidf_encoder_name,
    unit_rows,
)

__all__ = [
    "EmbeddingCache",
    "Encoder",
    "cached_encoder",
    "checked_vectors",
    "cosine_matrix",
    "rounded",
    "tfidf_char_ngrams",
    "tfidf_encoder_name",
    "unit_rows",
]
