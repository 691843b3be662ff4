"""The generated betterproto code matches proto/ (dev/scripts/gen-proto was run)."""

from __future__ import annotations

import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _tree(top: Path) -> dict[str, Path]:
    return {str(p.relative_to(top)): p for p in top.rglob("*.py")}


def test_generated_code_is_fresh(tmp_path: Path) -> None:
    if shutil.which("protoc-gen-python_betterproto", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("betterproto's protoc plugin is missing: install the project's dev extra")
    out = tmp_path / "gen"
    subprocess.run(
        [str(ROOT / "dev" / "scripts" / "gen-proto"), str(out)],
        check=True,
        env={"PYTHON": sys.executable, "PATH": "/usr/bin:/bin"},
    )
    fresh, committed = _tree(out), _tree(ROOT / "src" / "wlmvk" / "_proto")
    assert sorted(fresh) == sorted(committed)
    stale = [name for name in fresh if not filecmp.cmp(fresh[name], committed[name], shallow=False)]
    assert stale == [], f"regenerate with dev/scripts/gen-proto: {stale}"


def test_original_field_numbers_are_kept() -> None:
    """Spot-check wire compatibility with the original red-box protocol."""
    from wlmvk._proto import api

    assert bytes(api.SubmitJobRequest(script="x", partition="p", client_id="c")) == (
        b"\n\x01x\x12\x01p\x1a\x01c"
    )
    assert bytes(api.JobInfoRequest(job_id=7)) == b"\x08\x07"
    assert api.JobStatus.UNKNOWN.value == 10
    assert api.JobStatus.PENDING.value == 4
    assert bytes(api.ResourcesResponse(nodes=1, wall_time=2)) == b"\x08\x01\x20\x02"
