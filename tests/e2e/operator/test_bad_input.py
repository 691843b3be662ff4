"""A SlurmJob only the real sbatch can refuse: the refusal reaches the SlurmJob and ``kubectl describe``.

The rest of the bad-input matrix runs fast against a fake red-box
(tests/unit/operator/test_bad_slurmjobs.py, tests/unit/kubelet/test_bad_pods.py);
this is the one case that needs Slurm itself: a directive the operator passes
through unread (``--begin``) that sbatch rejects.
"""

from __future__ import annotations

import pytest

from tests.e2e.operator.stack import WITH_AGENT_HOST, Stack
from tests.e2e.operator.support import get_json, wait_status
from tests.e2e.operator.test_jobs import create, slurmjob

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, WITH_AGENT_HOST]


async def test_a_script_sbatch_refuses_fails_the_slurmjob_with_sbatchs_words(stack: Stack) -> None:
    await create(stack, slurmjob("refused", "#!/bin/sh\n#SBATCH --begin=garbage\necho never\n"))
    status = await wait_status(stack.apiserver, "refused", {"Failed", "Succeeded"}, timeout=60)
    assert status["status"] == "Failed"
    assert status["reason"] == "SubmitFailed"
    assert status["message"].startswith("the job was not submitted: Slurm refused the job:")
    assert "Invalid time specification" in status["message"]
    assert "jobId" not in status
    assert "exitCode" not in status  # no job ran
    pod = await get_json(stack.apiserver, "pod", "refused-job")
    assert (pod["status"]["phase"], pod["status"]["reason"]) == ("Failed", "SubmitFailed")
    described = await stack.kubectl("describe", "slurmjob", "refused")
    assert described.returncode == 0, described.stderr
    warning = [line for line in described.stdout.splitlines() if "Warning" in line and "SubmitFailed" in line]
    assert warning, described.stdout
    assert "Invalid time specification (pos=0): garbage" in warning[0]
    pod_events = await stack.kubectl("describe", "pod", "refused-job")
    assert "SubmitFailed" in pod_events.stdout
