"""The committed Go stubs in contract/go/api match proto/ (dev/scripts/gen-go-proto was run).

Generation uses the venv's grpcio-tools protoc and the protoc-gen-go and
protoc-gen-go-grpc versions pinned in contract/go/go.mod. grpcio-tools is not
pinned, so the one header line naming protoc's version is not compared.
Needs ``go`` (skips without it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.goclient import GO_MODULE, go_cache_root

ROOT = Path(__file__).resolve().parents[3]
PROTOC_VERSION = re.compile(r"^// (\t|- )protoc +\S+$", re.MULTILINE)


def _tree(top: Path) -> dict[str, str]:
    return {str(p.relative_to(top)): PROTOC_VERSION.sub("", p.read_text()) for p in top.rglob("*.go")}


def test_generated_go_code_is_fresh(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        pytest.skip("go is not installed: the Go stubs (contract/go/api) cannot be regenerated")
    out = tmp_path / "api"
    subprocess.run(
        [str(ROOT / "dev" / "scripts" / "gen-go-proto"), str(out)],
        check=True,
        env={**os.environ, "PYTHON": sys.executable, "WLMVK_GO_CACHE": str(go_cache_root())},
        timeout=600,
    )
    fresh, committed = _tree(out), _tree(GO_MODULE / "api")
    assert sorted(fresh) == sorted(committed)
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert stale == [], f"regenerate with dev/scripts/gen-go-proto: {stale}"
