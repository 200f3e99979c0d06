"""``python -m pool.decision_recognition`` (also ``python -m eval.decision_recognition``): the
decision-recognition CLI of :mod:`eval.decision_recognition.cli`, given the runners' embeddings
client for ``--embeddings-url``. ``eval`` makes no HTTP calls of its own, so the client is
injected here, where ``eval`` and ``runners`` may meet.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from eval.decision_recognition.cli import EncoderUnavailable
from eval.decision_recognition.cli import main as cli_main
from eval.encoders import Encoder
from runners.embeddings import EmbeddingsClient, EmbeddingsError, embed_texts


def remote_encoder(url: str, model: str, api_key_env: str | None) -> tuple[Encoder, str]:
    """(encode, identity) for an OpenAI-compatible embeddings endpoint; a failure for good is
    :class:`EncoderUnavailable` naming the URL and the status."""
    identity = EmbeddingsClient(url, model, api_key_env=api_key_env).identity

    def encode(texts: list[str]) -> np.ndarray:
        try:
            return np.asarray(embed_texts(url, model, texts, api_key_env=api_key_env), dtype=float)
        except EmbeddingsError as exc:
            raise EncoderUnavailable(str(exc)) from None

    return encode, identity


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(argv, remote_encoder=remote_encoder)


if __name__ == "__main__":
    sys.exit(main())
