"""The GGUF model cache: real files verified, atomic assembly and clear errors on synthetic chunks."""

from __future__ import annotations

import hashlib
import multiprocessing
import os
from pathlib import Path

import pytest

from runners.llamacpp import gguf_models
from runners.llamacpp.gguf_models import (
    MODELS,
    ModelHashMismatch,
    ModelPackageMissing,
    ModelSpec,
    PackageFile,
    assemble_parts,
    model_path,
    prepare_model,
)


def _real_model_or_skip(key: str, cache_dir: Path | None = None) -> Path:
    """The real model path; a missing [local] extra skips locally but fails in CI."""
    try:
        return model_path(key, cache_dir)
    except ModelPackageMissing as exc:
        if os.environ.get("CI") == "true":
            raise
        pytest.skip(str(exc))


@pytest.mark.parametrize("key", list(MODELS))
def test_real_model_is_prepared_and_hash_verified(key: str) -> None:
    path = _real_model_or_skip(key)  # the shared cache: assembling 0.7 GB per test run is waste
    spec = MODELS[key]
    assert path.name == spec.filename and path.stat().st_size == spec.size
    assert gguf_models.verified_sha256(path) == spec.sha256
    with open(path, "rb") as f:
        assert f.read(4) == b"GGUF"


def test_cache_dir_comes_from_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gguf_models.CACHE_ENV, str(tmp_path / "cache"))
    path = _real_model_or_skip("smollm2-135m-instruct")  # the small one: a link, hashed once
    assert path.parent == tmp_path / "cache"
    assert gguf_models.sha256_file(path) == MODELS["smollm2-135m-instruct"].sha256
    assert (tmp_path / "cache" / (path.name + ".sha256")).is_file()


def test_unknown_key_lists_known_models() -> None:
    with pytest.raises(KeyError, match="smollm2-135m-instruct"):
        model_path("no-such-model")


def test_missing_package_error_is_one_line_naming_what_to_install(
    tmp_path: Path,
) -> None:
    spec = ModelSpec(
        key="ghost",
        description="a model whose package is not installed",
        mode="chat",
        filename="ghost.gguf",
        sha256="0" * 64,
        size=1,
        parts=(PackageFile("medpool-no-such-model-package", "nothing/here.gguf"),),
    )
    with pytest.raises(ModelPackageMissing) as info:
        prepare_model(spec, tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert "pip install" in message and "medpool-no-such-model-package" in message
    assert "scripts/install.sh local" in message


# --- synthetic chunks: the same code paths on a few KiB ---------------------------------------

CHUNKS = [b"GGUF" + bytes(range(256)) * 40, os.urandom(5000), b"tail" * 3]
WHOLE = b"".join(CHUNKS)
WHOLE_SHA = hashlib.sha256(WHOLE).hexdigest()


def _chunk_files(tmp_path: Path) -> list[Path]:
    paths = []
    for i, data in enumerate(CHUNKS):
        path = tmp_path / "chunks" / f"c{i}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(data)
        paths.append(path)
    return paths


def _leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.iterdir() if p.name.endswith((".partial", ".tmp", ".link"))]


def test_assemble_concatenates_in_order_and_records_hash(tmp_path: Path) -> None:
    dest = tmp_path / "cache" / "model.gguf"
    assert assemble_parts(_chunk_files(tmp_path), dest, WHOLE_SHA) == dest
    assert dest.read_bytes() == WHOLE
    assert gguf_models._read_sidecar(dest) == WHOLE_SHA
    assert _leftovers(dest.parent) == []


def test_hash_mismatch_names_file_and_both_hashes_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    dest = tmp_path / "model.gguf"
    wrong = "f" * 64
    with pytest.raises(ModelHashMismatch) as info:
        assemble_parts(_chunk_files(tmp_path), dest, wrong)
    message = str(info.value)
    assert str(dest) in message and wrong in message and WHOLE_SHA in message
    assert not dest.exists()
    assert _leftovers(tmp_path) == []


def test_concurrent_assembly_never_exposes_a_partial_file(tmp_path: Path) -> None:
    parts = _chunk_files(tmp_path)
    dest = tmp_path / "cache" / "model.gguf"
    # spawn, not fork: a fork of this multi-threaded test process (fake servers' threads) can copy a held
    # lock into a worker, which then waits on it for ever
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        results = pool.starmap(assemble_parts, [(parts, dest, WHOLE_SHA)] * 8)
    assert results == [dest] * 8
    assert dest.read_bytes() == WHOLE
    assert _leftovers(dest.parent) == []


# --- synthetic installed distributions: prepare_model end to end ------------------------------


def _install_fake_dist(site: Path, name: str, relpath: str, data: bytes) -> PackageFile:
    """A minimal installed distribution (dist-info + one data file) that importlib.metadata finds."""
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (site / relpath).parent.mkdir(parents=True, exist_ok=True)
    (site / relpath).write_bytes(data)
    return PackageFile(name, relpath)


@pytest.fixture()
def chunked_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModelSpec:
    site = tmp_path / "site"
    parts = tuple(
        _install_fake_dist(site, f"medpool-fake-part{i}", f"medpool_fake_part{i}/data/p{i}.bin", data)
        for i, data in enumerate(CHUNKS)
    )
    monkeypatch.syspath_prepend(str(site))
    return ModelSpec("fake", "synthetic", "completion", "fake.gguf", WHOLE_SHA, len(WHOLE), parts)


def test_prepare_assembles_once_then_trusts_the_sidecar(
    chunked_spec: ModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    path = prepare_model(chunked_spec, cache)
    assert path.read_bytes() == WHOLE

    def no_rehash(_: Path) -> str:
        raise AssertionError("verified file was hashed again")

    monkeypatch.setattr(gguf_models, "sha256_file", no_rehash)
    assert prepare_model(chunked_spec, cache) == path


def test_prepare_replaces_a_corrupt_cached_file(chunked_spec: ModelSpec, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = prepare_model(chunked_spec, cache)
    path.write_bytes(b"x" * len(WHOLE))  # same size, new mtime: the sidecar no longer applies
    assert prepare_model(chunked_spec, cache).read_bytes() == WHOLE


def test_single_part_model_is_linked_and_mismatch_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = tmp_path / "site"
    part = _install_fake_dist(site, "medpool-fake-single", "medpool_fake_single/m.gguf", WHOLE)
    monkeypatch.syspath_prepend(str(site))
    good = ModelSpec("single", "synthetic", "chat", "m.gguf", WHOLE_SHA, len(WHOLE), (part,))
    path = prepare_model(good, tmp_path / "cache")
    assert path.is_symlink() and path.read_bytes() == WHOLE

    bad = ModelSpec("single", "synthetic", "chat", "m2.gguf", "e" * 64, len(WHOLE), (part,))
    with pytest.raises(ModelHashMismatch, match="e{64}.*" + WHOLE_SHA):
        prepare_model(bad, tmp_path / "cache")


def test_cli_prints_key_path_and_hash(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _real_model_or_skip("smollm2-135m-instruct", tmp_path)
    assert gguf_models.main(["--cache-dir", str(tmp_path), "smollm2-135m-instruct"]) == 0
    out = capsys.readouterr().out
    assert "smollm2-135m-instruct" in out and MODELS["smollm2-135m-instruct"].sha256 in out
