"""A Slurm release's box (dev/scripts/slurm-release) as tests and red-box meet it.

The release is pinned (``sinfo -V`` inside is the release asked), the jobs
directory is one directory seen at the same path from both sides with the same
owners, and a release the script does not know is refused with the ones it knows.
"""

from __future__ import annotations

import pwd
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.fixtures import slurm_release
from tests.fixtures.slurm import JOB_USER, JOBS_ROOT

in_a_box = pytest.mark.release_box


def test_an_unknown_release_is_refused_naming_the_known_ones() -> None:
    done = subprocess.run(
        [str(slurm_release.SCRIPT), "up", "21.08"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "slurm-release: error: unknown release '21.08' (known: 24.11 = Debian trixie, 26.05 = Debian sid;"
        " the host's own is dev/scripts/slurm-local's default)"
    )


@in_a_box
@pytest.mark.slurm
@pytest.mark.slurm_releases
def test_the_box_runs_the_release_asked(slurm: str) -> None:
    version = subprocess.run(["sinfo", "-V"], capture_output=True, text=True, check=True).stdout.strip()
    assert version.startswith(f"slurm-wlm {slurm_release.RELEASE}."), version


@in_a_box
@pytest.mark.slurm
@pytest.mark.slurm_releases
def test_a_job_writes_in_the_jobs_directory_as_its_owner_at_the_same_path(slurm: str) -> None:
    work = Path(tempfile.mkdtemp(prefix="box-", dir=JOBS_ROOT))
    owner = pwd.getpwnam(JOB_USER)
    subprocess.run(["chown", f"{owner.pw_uid}:{owner.pw_gid}", str(work)], check=True)
    submit = slurm_release.exec_argv(
        str(slurm_release.RELEASE),
        "sbatch",
        "--parsable",
        f"--chdir={work}",
        f"--output={work}/out.txt",
        "--wrap",
        "pwd; id -un",
        user=JOB_USER,
    )
    job = subprocess.run(submit, capture_output=True, text=True, check=True).stdout.strip()
    out = work / "out.txt"
    deadline = time.monotonic() + 60
    while not (out.exists() and out.read_text().count("\n") == 2):
        assert time.monotonic() < deadline, f"job {job} wrote no {out}"
        time.sleep(0.2)
    assert out.read_text() == f"{work}\n{JOB_USER}\n"
    assert (out.stat().st_uid, out.stat().st_gid) == (owner.pw_uid, owner.pw_gid)
