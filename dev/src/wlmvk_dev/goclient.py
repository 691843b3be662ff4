"""The Go contract client (contract/go/cmd/wlmclient) built from the checkout, for tests and benchmarks.

``build_wlmclient()`` compiles the program once per source state and returns its path, or raises
``GoMissing`` when ``go`` is not installed. The build lives under ``$WLMVK_GO_CACHE`` (default
``~/.cache/wlmvk-go``), in a directory keyed by the hash of go.mod and go.sum that holds its own Go
build cache, so a rerun with the same sources reuses the binary and a changed source recompiles
only itself. ``GOTOOLCHAIN=local`` and ``-mod=readonly``: the build never fetches another Go
toolchain and never edits go.mod/go.sum; modules come from the Go module cache or the module proxy.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
GO_MODULE = ROOT / "contract" / "go"
BUILD_TIMEOUT = 600.0


class GoMissing(Exception):
    """``go`` is not installed: the Go contract client cannot be built."""


class BuildFailed(Exception):
    """``go build`` of the contract client failed; the message is its output."""


def go_cache_root() -> Path:
    """Where built Go programs and their build cache live (never in the work tree)."""
    if explicit := os.environ.get("WLMVK_GO_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "wlmvk-go"


def go_env(build_dir: Path) -> dict[str, str]:
    """The environment of a build in ``build_dir``: its own build cache, no toolchain fetch."""
    return {
        **os.environ,
        "GOCACHE": str(build_dir / "gocache"),
        "GOTOOLCHAIN": "local",
        "GOFLAGS": "-mod=readonly -buildvcs=false",
    }


def _digest(*parts: bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.hexdigest()[:16]


def build_wlmclient() -> Path:
    """The wlmclient binary for the current sources, built when missing."""
    go = shutil.which("go")
    if go is None:
        raise GoMissing("go is not installed: the Go contract client (contract/go) cannot be built")
    build_dir = (
        go_cache_root()
        / f"build-{_digest((GO_MODULE / 'go.mod').read_bytes(), (GO_MODULE / 'go.sum').read_bytes())}"
    )
    version = subprocess.run([go, "version"], capture_output=True, check=True).stdout
    sources = sorted(GO_MODULE.rglob("*.go"))
    key = _digest(version, *(f"{p.relative_to(GO_MODULE)}\0".encode() + p.read_bytes() for p in sources))
    binary = build_dir / f"wlmclient-{key}"
    if binary.exists():
        return binary
    build_dir.mkdir(parents=True, exist_ok=True)
    partial = build_dir / f".wlmclient-{key}.{os.getpid()}"
    done = subprocess.run(
        [go, "build", "-o", str(partial), "./cmd/wlmclient"],
        cwd=GO_MODULE,
        env=go_env(build_dir),
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise BuildFailed(f"go build of contract/go/cmd/wlmclient failed:\n{done.stderr}")
    partial.replace(binary)
    return binary
