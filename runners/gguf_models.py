"""``python -m runners.gguf_models``: the same command as ``python -m runners.llamacpp.gguf_models``
(prepare and sha256-verify the local GGUF models), for scripts that call it by this name."""

from __future__ import annotations

from runners.llamacpp.gguf_models import main

if __name__ == "__main__":
    raise SystemExit(main())
