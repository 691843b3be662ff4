"""A staging pod the API server forbids: reported on the SlurmJob, retried with a backoff, let in later.

On the real control plane an admission policy (a ValidatingAdmissionPolicy, as manifests/admission.yaml
installs, here one that forbids exactly this test's staging pod with reason Forbidden: HTTP 403)
refuses the prepare pod. The SlurmJob must say so (condition Admitted=False, reason PodRefused, one
Warning Event) instead of retrying silently, and go on once the policy is removed.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.e2e.operator.stack import WITH_AGENT_HOST, Stack
from tests.e2e.operator.support import eventually, get_json, status_of, wait_status

pytestmark = [pytest.mark.slurm, pytest.mark.kubectl, pytest.mark.kube_real, WITH_AGENT_HOST]


def policy(name: str, pod: str) -> str:
    docs = [
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE"],
                            "resources": ["pods"],
                        }
                    ]
                },
                "matchConditions": [{"name": "this-pod", "expression": f"object.metadata.name == '{pod}'"}],
                "validations": [
                    {
                        "expression": "false",
                        "message": "hostPath volumes are not allowed here",
                        "reason": "Forbidden",
                    }
                ],
            },
        },
        {
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        },
    ]
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": docs})


async def test_a_forbidden_staging_pod_is_reported_and_retried_until_let_in(
    stack: Stack, tmp_path: Any
) -> None:
    name = f"refused-{uuid.uuid4().hex[:6]}"
    pod = f"{name}-job-prepare"
    gate = f"wlmvk-test-{name}"
    applied = await stack.kubectl("apply", "-f", "-", input=policy(gate, pod))
    assert applied.returncode == 0, applied.stderr
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    (inputs / "in.txt").write_text("let in\n")
    inputs.chmod(0o755)
    tmp_path.chmod(0o755)
    body = {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "metadata": {"name": name},
        "spec": {
            "batch": "#!/bin/sh\ncat in/inputs/in.txt\n",
            "prepare": {
                "to": "in",
                "mount": {"name": "inputs", "hostPath": {"path": str(inputs), "type": "Directory"}},
            },
        },
    }
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }

    async def in_force() -> bool:
        dry = await stack.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe))
        return dry.returncode != 0 and "hostPath volumes are not allowed here" in dry.stderr

    try:
        # A policy takes a moment to reach the API server's admission: wait until it refuses.
        await eventually(in_force, timeout=60, what="the policy in force")
        created = await stack.kubectl("create", "-f", "-", input=json.dumps(body))
        assert created.returncode == 0, created.stderr

        async def refused() -> dict[str, Any] | None:
            status = await status_of(stack.apiserver, name)
            return status if status.get("reason") == "PodRefused" else None

        status = await eventually(refused, timeout=60, what="the refusal on the SlurmJob")
        assert status["status"] == "Pending"
        assert status["message"].startswith(f"pod {pod} was refused: ")
        assert "hostPath volumes are not allowed here" in status["message"]
        admitted = [c for c in status["conditions"] if c["type"] == "Admitted"]
        assert [(c["status"], c["reason"], c["message"]) for c in admitted] == [
            ("False", "PodRefused", status["message"])
        ]
        assert not await get_json(stack.apiserver, "pod", pod)
    finally:
        deleted = await stack.kubectl(
            "delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", gate
        )
        assert deleted.returncode == 0, deleted.stderr

    final = await wait_status(stack.apiserver, name, {"Succeeded", "Failed"}, timeout=180)
    assert final["status"] == "Succeeded", final
    assert [(c["status"], c["reason"]) for c in final["conditions"] if c["type"] == "Admitted"] == [
        ("True", "Admitted")
    ]
    events = await get_json(stack.apiserver, "events", "--field-selector", f"involvedObject.name={name}")
    refusals = [e for e in events["items"] if e["reason"] == "PodRefused"]
    assert [(e["type"], int(e.get("count") or 1)) for e in refusals] == [("Warning", 1)], refusals
