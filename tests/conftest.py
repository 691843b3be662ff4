"""Shared pytest configuration: fixture plugins, the suite's markers, its groups for
pytest-xdist, and a guard against empty runs.

scripts/test runs the suite on several workers with ``--dist loadgroup``. Tests go to any worker
one by one, except those that share state beyond their own fixtures, which pytest-xdist keeps
together on one worker in order:

- every test on the real control plane (``real``): they share one cluster, which each
  cleans after itself, and the session's agent node ``agent-host``;
- a test module's tests that share a module-scoped fixture (one group per module), so that
  the fixture (a wheel, a Go build) is made once and never twice at the same time;
- a test marked ``xdist_group(name)`` (pytest-xdist's own marker): with the others of that name.

- under a release (the release subset, dev/scripts/test-releases), every tenancy test (``TENANTS_SLURM``
  among its fixtures), whatever its module: they share the release's one box, whose tenants' QoS
  limits and default accounts some of them change for a while.

Tests marked ``serial`` change what every other test of the local Slurm sees (a partition
created and deleted): scripts/test deselects them from the parallel run and runs them alone.
Under a release (the release subset, dev/scripts/test-releases) the tests whose fixtures stop one of the
release box's daemons (``RESTARTING_THE_BOX``) are marked ``box_restart``, and run alone after
the others.
"""

from __future__ import annotations

import pytest
from _pytest.nodeid import coerce_node_id

pytest_plugins = [
    "tests.fixtures.prerequisites",
    "tests.fixtures.slurm",
    "tests.fixtures.redbox",
    "tests.fixtures.controlplane",
    "tests.fixtures.apiserver",
    "tests.fixtures.kubelet",
    "tests.fixtures.shared_dirs",
]

REAL_GROUP = "real"
TENANCY_GROUP = "tenancy"
# The tenants' Slurm (tests/e2e/tenancy/conftest.py): under a release, the box every test shares.
TENANTS_SLURM = "tenant_slurm"
# Fixtures that, under a release, stop one of its box's daemons: the fault suite's own Slurm
# (tests/faults/conftest.py) is the box, whose slurmctld the slurmctld-stopped test stops (SIGSTOP)
# past MessageTimeout.
RESTARTING_THE_BOX = frozenset({"own_slurm"})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "serial: changes what every test of the local Slurm sees; run alone (scripts/test runs it"
        " after the parallel run)",
    )
    config.addinivalue_line(
        "markers",
        "metrics_server: needs metrics-server on the real plane (dev/scripts/kube-local build"
        " --metrics-server); CI deselects it",
    )


def pytest_itemcollected(item: pytest.Item) -> None:
    """``box_restart`` on a test whose fixtures stop a release's box's daemons (before ``-m`` selects)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is not None and RESTARTING_THE_BOX & set(info.names_closure):
        item.add_marker(pytest.mark.box_restart)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """A run that selects no test is an error, not a silent pass; groups for pytest-xdist.

    Tests marked ``release_box`` are deselected where no release's box is the Slurm under
    test: they are about the box, which the release subset runs (a skip there would read as a
    missing prerequisite).
    """
    from tests.fixtures import slurm_release

    if slurm_release.RELEASE is None:
        boxed = [item for item in items if item.get_closest_marker("release_box") is not None]
        if boxed:
            config.hook.pytest_deselected(items=boxed)
            items[:] = [item for item in items if item.get_closest_marker("release_box") is None]
    if not items and not config.getoption("collectonly"):
        raise pytest.UsageError("no tests were selected")
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if (group := xdist_group(item)) is not None and "@" not in item.nodeid:
            # What pytest-xdist's loadgroup does with an xdist_group marker: the group named at
            # the end of the test's id, which its scheduler reads. Its own assignment (to
            # ``item._nodeid``) is lost on pytest 9, which keeps the id in ``item._id``.
            item._id = coerce_node_id(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]


def xdist_group(item: pytest.Item) -> str | None:
    """The worker group ``item`` must run in, or None when it may run anywhere (see above)."""
    from tests.fixtures import slurm_release
    from tests.fixtures.controlplane import plane_of

    if (named := item.get_closest_marker("xdist_group")) is not None:
        return str(named.args[0] if named.args else named.kwargs["name"])
    info = getattr(item, "_fixtureinfo", None)
    closure = set(info.names_closure) if info is not None else set()
    if plane_of(item) == "real" or "real_kube" in closure:
        return REAL_GROUP
    if slurm_release.RELEASE is not None and TENANTS_SLURM in closure:
        return TENANCY_GROUP
    if info is not None:
        for name in closure:
            defs = info.name2fixturedefs.get(name) or ()
            if any(fixture.scope in ("module", "package", "class") for fixture in defs):
                return item.nodeid.split("::", 1)[0]
    return None
