"""Two tenants on a Slurm of their own that enforces associations (docs/tenancy.md).

``tenant_slurm`` starts ``dev/scripts/slurm-local`` in its own base directory, on its own ports
(the shared Slurm's plus 70, and 3 more per pytest worker) and cluster name, with
``AccountingStorageEnforce=associations,limits,qos``, and makes the two tenants' accounts, QoS
and users with ``sacctmgr``. The shared Slurm, which the rest of the suite uses, keeps running
unchanged. Under a release (``WLMVK_SLURM_RELEASE``, the release subset) the release's box is the
tenants' Slurm as it runs: the ``slurm`` fixture starts it enforcing for the whole subset
(``tests.fixtures.slurm_release``), so no test restarts it, and its users' default account is the
job owners' own, not a tenant's. The two Unix users are the ones the suite already has: the job
owner (uid 1000) and ``slurmuser`` (made by slurm-local).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.tenancy.rig import operator, tenancy
from tests.e2e.tenancy.tenants import TENANTS
from tests.faults import ownslurm
from tests.fixtures import slurm_release
from wlmvk_dev.tenants import ENFORCE, associate

__all__ = ["operator", "tenancy"]


@dataclass(frozen=True)
class ReleaseBox:
    """A Slurm release's box (``dev/scripts/slurm-release``) as the tenants' Slurm."""

    release: str
    cluster: str

    @property
    def jobs_root(self) -> Path:
        return slurm_release.jobs_root(self.release)


@contextlib.contextmanager
def enforcing() -> Iterator[ownslurm.Instance | ReleaseBox]:
    """The host's Slurm: an own instance beside the shared one; a release: its box, which the
    ``slurm`` fixture made enforcing for every test of the subset."""
    if slurm_release.RELEASE is not None:
        enforce = slurm_release.enforced(slurm_release.RELEASE)
        assert enforce == ENFORCE, f"the {slurm_release.RELEASE} box enforces {enforce!r}, not {ENFORCE!r}"
        yield ReleaseBox(slurm_release.RELEASE, os.environ.get("WLMVK_SLURM_CLUSTER") or "testcluster")
        return
    # One per pytest worker: the tenancy modules are groups of their own (module-scoped fixtures),
    # which two workers may run at once, and the real plane's tests run in its group meanwhile; one
    # shared instance was started twice, emptied and stopped under the other's jobs.
    worker, nth = ownslurm.worker_slot()
    shared = os.environ.get("WLMVK_SLURM_BASE", "/var/tmp/wlmvk-local-slurm")
    port = int(os.environ.get("WLMVK_SLURM_CTLD_PORT") or 6917) + 70 + 3 * nth
    with ownslurm.running(
        ownslurm.Instance(Path(f"{shared}-tenancy-{worker}"), port, "tenancy", enforce=ENFORCE)
    ) as own:
        yield own


@pytest.fixture(scope="module")
def tenant_slurm(slurm: str) -> Iterator[ownslurm.Instance | ReleaseBox]:
    """A Slurm enforcing associations, with A's and B's; this process pointed at it meanwhile."""
    with enforcing() as instance:
        for tenant in TENANTS:
            associate(tenant, instance.cluster)
        yield instance


@pytest.fixture
def tenant_redbox_args() -> tuple[str, ...]:
    """What each tenant user's red-box gets besides its allow-lists (a test module may say more)."""
    return ()
