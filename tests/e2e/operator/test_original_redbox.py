"""A SlurmJob on a virtual node whose red-box serves only the original API (``--original-api-only``).

The original red-box ignores a job's working directory (the job runs where red-box stands), so the
SlurmJob must not report one: its ``status.workingDir`` would name a directory nothing ran in.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.e2e.operator.stack import WITH_AGENT_HOST, Stack, build
from tests.e2e.operator.support import get_json, wait_status
from tests.fixtures.redbox import JOB_OWNER, RedBox
from wlmvk.core import names

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, WITH_AGENT_HOST]


@pytest.fixture
async def stack(
    apiserver: Any, redbox_factory: Callable[..., RedBox], kubelet_factory: Any
) -> AsyncIterator[Stack]:
    built = await build(apiserver, redbox_factory(user=JOB_OWNER, original=True), kubelet_factory)
    yield built
    await built.stop_operator()


async def test_no_working_dir_is_reported_for_an_original_red_box(stack: Stack) -> None:
    name = f"old-{uuid.uuid4().hex[:6]}"
    body = {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": name},
        "spec": {"batch": "#!/bin/sh\n#SBATCH --partition=debug\necho from the original\n"},
    }
    created = await stack.kubectl("create", "-f", "-", input=json.dumps(body))
    assert created.returncode == 0, created.stderr
    final = await wait_status(stack.apiserver, name, {"Succeeded", "Failed"}, timeout=120)
    assert final["status"] == "Succeeded", final
    assert final["node"].endswith("-debug")
    assert "workingDir" not in final, final
    node = await get_json(stack.apiserver, "node", final["node"])
    assert node["metadata"]["annotations"][names.ANNOTATION_WORKING_DIR_IGNORED] == "true"
