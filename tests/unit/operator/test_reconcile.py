"""Reconciliation decisions: the steps of a job, its status and events, idempotence."""

from __future__ import annotations

import json
from dataclasses import replace

from tests.unit.operator.builders import (
    SETTINGS,
    World,
    hostpath,
    running,
    scheduled,
    slurmjob,
    terminated,
    unschedulable,
    virtual_node,
    wlmjob,
)
from wlmvk.core import names
from wlmvk.operator import reconcile

NODE = "slurm-c1-debug"


def creates(actions: list[reconcile.Action]) -> list[str]:
    return [a.body["metadata"]["name"] for a in actions if isinstance(a, reconcile.CreatePod)]


def event_reasons(world: World) -> list[str]:
    return [e.reason for e in world.events]


def test_plain_job_creates_the_job_pod_and_is_pending() -> None:
    world = World(slurmjob(), [virtual_node()])
    assert creates(world.step()) == ["sj1-job"]
    pod = world.pods["sj1-job"]
    assert pod["metadata"]["annotations"][names.ANNOTATION_BATCH] == "#!/bin/sh\necho Hello\n"
    assert pod["metadata"]["annotations"][names.ANNOTATION_WORKING_DIR] == "/jobs/default/sj1-u-1"
    assert pod["metadata"]["ownerReferences"][0] == {
        "apiVersion": "wlm.sylabs.io/v1alpha1",
        "kind": "SlurmJob",
        "name": "sj1",
        "uid": "u-1",
        "controller": True,
        "blockOwnerDeletion": True,
    }
    spec = pod["spec"]
    assert spec["containers"] == [{"name": "jt1", "image": "no-image"}]
    assert spec["restartPolicy"] == "Never"
    assert spec["nodeSelector"] == {"type": "virtual-kubelet"}
    assert spec["tolerations"][0]["key"] == names.TAINT_KEY
    assert "affinity" not in spec
    assert world.status["status"] == "Pending"
    assert world.status["workingDir"] == "/jobs/default/sj1-u-1"


def test_second_pass_does_nothing() -> None:
    world = World(slurmjob(), [virtual_node()])
    world.step()
    assert world.step() == []


def test_user_node_selector_overlays_type() -> None:
    world = World(slurmjob(nodeSelector={"kubernetes.io/hostname": NODE}), [])
    world.step()
    assert world.pods["sj1-job"]["spec"]["nodeSelector"] == {
        "type": "virtual-kubelet",
        "kubernetes.io/hostname": NODE,
    }


def test_directives_become_node_affinity() -> None:
    batch = "#!/bin/sh\n#SBATCH -N 2 --time=10 --mem=4G\n#SBATCH -c 2 --ntasks-per-node=2 -C avx2|ib\necho\n"
    world = World(slurmjob(batch=batch), [])
    world.step()
    terms = world.pods["sj1-job"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    common = [
        {"key": names.LABEL_NODES, "operator": "Gt", "values": ["1"]},
        {"key": names.LABEL_WALL_TIME, "operator": "Gt", "values": ["599"]},
        {"key": names.LABEL_MEM_PER_NODE, "operator": "Gt", "values": ["4095"]},
        {"key": names.LABEL_CPU_PER_NODE, "operator": "Gt", "values": ["3"]},
    ]
    assert terms == [
        {"matchExpressions": [*common, {"key": "wlm.sylabs.io/avx2", "operator": "Exists"}]},
        {"matchExpressions": [*common, {"key": "wlm.sylabs.io/ib", "operator": "Exists"}]},
    ]


def test_unreadable_directive_fails_with_a_clear_reason() -> None:
    world = World(slurmjob(batch="#!/bin/sh\n#SBATCH --mem=lots\necho\n"), [])
    actions = world.step()
    assert creates(actions) == []
    assert world.status["status"] == "Failed"
    assert world.status["reason"] == "InvalidSpec"
    assert "--mem wants a size" in world.status["message"]
    assert world.status["conditions"][0]["type"] == "Valid"
    assert event_reasons(world) == ["InvalidSpec"]
    assert world.step() == []


def test_scheduler_reason_is_reported_once() -> None:
    world = World(slurmjob(), [])
    world.step()
    message = "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
    world.pods["sj1-job"] = unschedulable(world.pods["sj1-job"], message)
    world.step()
    assert world.status["status"] == "Pending"
    assert world.status["reason"] == "Unschedulable"
    assert world.status["message"] == message
    assert world.status["conditions"][0]["type"] == "Scheduled"
    assert world.status["conditions"][0]["status"] == "False"
    assert event_reasons(world) == ["Created", "FailedScheduling"]
    assert world.step() == []


def test_job_runs_and_succeeds() -> None:
    world = World(slurmjob(), [virtual_node()])
    world.step()
    world.pods["sj1-job"] = scheduled(world.pods["sj1-job"], NODE, job_id="42")
    world.step()
    assert (world.status["status"], world.status["reason"], world.status["jobId"]) == (
        "Pending",
        "Queued",
        "42",
    )
    world.pods["sj1-job"] = scheduled(world.pods["sj1-job"], NODE, job_id="42", phase="Running")
    world.step()
    assert world.status["status"] == "Running"
    assert world.status["node"] == NODE
    assert world.status["partition"] == "debug"
    assert world.status["startTime"] == "2026-12-02T16:00:05Z"
    world.pods["sj1-job"] = terminated(world.pods["sj1-job"], reason="Job finished")
    world.step()
    assert world.status["status"] == "Succeeded"
    assert world.status["exitCode"] == 0
    assert world.status["completionTime"] == "2026-12-02T16:00:09Z"
    assert event_reasons(world) == ["Created", "Succeeded"]
    assert world.step() == []


def test_failing_script_reports_its_exit_code() -> None:
    world = World(slurmjob(), [virtual_node()])
    world.step()
    world.pods["sj1-job"] = terminated(
        scheduled(world.pods["sj1-job"], NODE, job_id="7"),
        exit_code=3,
        reason="Failed",
        message="NonZeroExitCode",
    )
    world.step()
    assert world.status["status"] == "Failed"
    assert world.status["exitCode"] == 3
    assert "exit code 3" in world.status["message"]
    assert world.events[-1].type == "Warning"


def test_cancelled_job() -> None:
    world = World(slurmjob(), [virtual_node()])
    world.step()
    world.pods["sj1-job"] = terminated(scheduled(world.pods["sj1-job"], NODE, job_id="7"), reason="Cancelled")
    world.step()
    assert world.status["status"] == "Cancelled"


def test_job_pod_deleted_while_running_fails_the_job() -> None:
    world = World(slurmjob(), [virtual_node()])
    world.step()
    world.pods["sj1-job"] = scheduled(world.pods["sj1-job"], NODE, job_id="42", phase="Running")
    world.step()
    del world.pods["sj1-job"]
    actions = world.step()
    assert creates(actions) == []
    assert world.status["reason"] == "JobPodDeleted"


def test_terminal_status_is_never_revisited() -> None:
    body = slurmjob()
    body["status"] = {"status": "Succeeded"}
    assert World(body, []).step() == []


def test_deleting_resource_does_nothing() -> None:
    body = slurmjob()
    body["metadata"]["deletionTimestamp"] = "2026-12-02T16:00:00Z"
    assert World(body, [virtual_node()]).step() == []


PREPARE = {"to": ".", "mount": hostpath("inputs", "/home/docker/inputs")}
RESULTS = {"from": "bar", "mount": hostpath("outputs", "/home/docker/outputs")}


def readme_job() -> World:
    batch = "#!/bin/sh\n#SBATCH --nodes=1\necho Hello\nmkdir bar\ncp inputs/foo.txt bar/output.txt\n"
    body = slurmjob(
        "prepare-and-results",
        batch=batch,
        nodeSelector={"kubernetes.io/hostname": "slurm-c1-cpu"},
        prepare=PREPARE,
        results=RESULTS,
    )
    nodes = [virtual_node("debug"), virtual_node("cpu", host="agent7", socket="/run/rb/c1.sock")]
    return World(body, nodes)


def test_staging_pods_run_the_images_entrypoint_unless_a_command_is_set() -> None:
    world = readme_job()
    world.settings = replace(SETTINGS, staging=replace(SETTINGS.staging, command=()))
    world.step()
    container = world.pods["prepare-and-results-job-prepare"]["spec"]["containers"][0]
    assert "command" not in container
    assert container["args"][:2] == ["stage", "in"]


def test_prepare_pod_runs_stage_in_on_the_agent_host() -> None:
    world = readme_job()
    assert creates(world.step()) == ["prepare-and-results-job-prepare"]
    pod = world.pods["prepare-and-results-job-prepare"]
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": "agent7"}
    assert spec["securityContext"]["runAsUser"] == 1000
    assert spec["securityContext"]["runAsGroup"] == 1000
    assert spec["restartPolicy"] == "Never"
    container = spec["containers"][0]
    assert container["image"] == "wlmvk:test"
    workdir = "/jobs/default/prepare-and-results-u-1"
    assert [*container["command"], *container["args"]] == [
        "wlmvk",
        "stage",
        "in",
        "--socket",
        "/var/run/wlmvk-red-box/c1.sock",
        "--from",
        "/mnt/inputs",
        "--to",
        workdir,
        "--timeout",
        "3600",
    ]
    # A stalled transfer ends: the command at its timeout, the pod at its deadline (the start added).
    assert spec["activeDeadlineSeconds"] == 3600 + 300
    assert {m["mountPath"] for m in container["volumeMounts"]} == {"/mnt/inputs", "/var/run/wlmvk-red-box"}
    # The socket's directory, not the socket: a mount of the file would pin the red-box it was made by.
    socket = next(v for v in spec["volumes"] if v["name"] == "wlmvk-red-box-socket")
    assert socket["hostPath"] == {"path": "/run/rb", "type": "Directory"}
    assert hostpath("inputs", "/home/docker/inputs") in spec["volumes"]
    assert pod["metadata"]["ownerReferences"][0]["controller"] is True
    assert world.status["status"] == "Preparing"
    assert world.status["node"] == "slurm-c1-cpu"
    assert world.status["partition"] == "cpu"
    assert "prepare-and-results-job" not in world.pods


def test_the_whole_readme_session() -> None:
    world = readme_job()
    world.step()
    prepare = "prepare-and-results-job-prepare"
    world.pods[prepare] = running(world.pods[prepare])
    assert creates(world.step()) == []
    world.pods[prepare] = terminated(world.pods[prepare])
    assert creates(world.step()) == ["prepare-and-results-job"]
    job = world.pods["prepare-and-results-job"]
    assert job["spec"]["nodeSelector"] == {
        "type": "virtual-kubelet",
        "kubernetes.io/hostname": "slurm-c1-cpu",
    }
    assert job["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ] == [{"matchExpressions": [{"key": names.LABEL_NODES, "operator": "Gt", "values": ["0"]}]}]
    world.pods["prepare-and-results-job"] = scheduled(job, "slurm-c1-cpu", job_id="9", phase="Running")
    world.step()
    assert world.status["status"] == "Running"
    world.pods["prepare-and-results-job"] = terminated(
        world.pods["prepare-and-results-job"], reason="Job finished"
    )
    assert creates(world.step()) == ["prepare-and-results-job-collect"]
    assert world.status["status"] == "Collecting"
    assert "completionTime" not in world.status
    collect = world.pods["prepare-and-results-job-collect"]
    args = collect["spec"]["containers"][0]["args"]
    assert args[args.index("--from") + 1] == "/jobs/default/prepare-and-results-u-1/bar"
    assert args[args.index("--to") + 1] == "/collect"
    assert collect["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "agent7"}
    assert (args[args.index("--timeout") + 1], collect["spec"]["activeDeadlineSeconds"]) == ("3600", 3900)
    world.pods["prepare-and-results-job-collect"] = terminated(collect)
    world.step()
    assert world.status["status"] == "Succeeded"
    assert world.status["jobId"] == "9"
    assert [c["type"] for c in world.status["conditions"]] == ["Prepared", "Scheduled", "Collected"]
    assert event_reasons(world) == ["Preparing", "Created", "Collecting", "Succeeded"]
    assert world.step() == []


def test_failed_prepare_fails_the_job_without_submitting() -> None:
    world = readme_job()
    world.step()
    prepare = "prepare-and-results-job-prepare"
    world.pods[prepare] = terminated(world.pods[prepare], exit_code=1, message="inputs: permission denied")
    assert creates(world.step()) == []
    assert world.status["status"] == "Failed"
    assert world.status["reason"] == "PrepareFailed"
    assert "permission denied" in world.status["message"]


def test_failed_collection_fails_the_job() -> None:
    world = readme_job()
    world.step()
    world.pods["prepare-and-results-job-prepare"] = terminated(world.pods["prepare-and-results-job-prepare"])
    world.step()
    world.pods["prepare-and-results-job"] = terminated(
        scheduled(world.pods["prepare-and-results-job"], "slurm-c1-cpu", job_id="9"), reason="Job finished"
    )
    world.step()
    collect = "prepare-and-results-job-collect"
    world.pods[collect] = terminated(world.pods[collect], exit_code=2, message="bar: no such file")
    world.step()
    assert world.status["status"] == "Failed"
    assert world.status["reason"] == "CollectFailed"
    assert "bar: no such file" in world.status["message"]


def test_prepare_with_no_fitting_partition_waits_with_a_reason() -> None:
    world = readme_job()
    world.body["spec"]["batch"] = "#!/bin/sh\n#SBATCH --nodes=5\necho\n"
    assert creates(world.step()) == []
    assert world.status["status"] == "Pending"
    assert world.status["reason"] == "Unschedulable"
    assert "0/2 virtual nodes match" in world.status["message"]
    assert world.step() == []


def test_prepare_picks_the_partition_that_fits() -> None:
    world = readme_job()
    del world.body["spec"]["nodeSelector"]
    world.body["spec"]["batch"] = "#!/bin/sh\n#SBATCH --gres=gpu:1\necho\n"
    world.nodes.append(virtual_node("gpu", host="gpuhost", gpus=2))
    world.step()
    assert world.status["node"] == "slurm-c1-gpu"
    assert world.pods["prepare-and-results-job-prepare"]["spec"]["nodeSelector"] == {
        "kubernetes.io/hostname": "gpuhost"
    }


def test_path_escape_fails_before_any_pod() -> None:
    for spec in (
        {"prepare": {"to": "../other", "mount": hostpath("inputs", "/in")}},
        {"results": {"from": "/etc/passwd", "mount": hostpath("outputs", "/out")}},
        {"results": {"from": "a/../../b", "mount": hostpath("outputs", "/out")}},
    ):
        world = World(slurmjob(**spec), [virtual_node()])
        assert creates(world.step()) == []
        assert world.status["status"] == "Failed"
        assert "working directory" in world.status["message"]


def test_restarted_operator_reports_nothing_new() -> None:
    world = readme_job()
    world.step()
    world.pods["prepare-and-results-job-prepare"] = terminated(world.pods["prepare-and-results-job-prepare"])
    world.step()
    world.pods["prepare-and-results-job"] = scheduled(
        world.pods["prepare-and-results-job"], "slurm-c1-cpu", job_id="9", phase="Running"
    )
    world.step()
    before = len(world.events)
    # a new operator sees the same resource and pods: nothing to create, patch or report
    restarted = World(world.body, world.nodes)
    restarted.pods = dict(world.pods)
    assert restarted.step() == []
    assert len(world.events) == before


def test_wlmjob_carries_the_container_request() -> None:
    world = World(
        wlmjob(
            image="docker://alpine:3",
            options={"app": "x", "binds": ["/a:/b"], "cleanEnv": True},
            resources={"nodes": 1, "cpuPerNode": 2, "memPerNode": 512, "wallTime": 120},
        ),
        [],
    )
    assert creates(world.step()) == ["wj1-wlm-job"]
    pod = world.pods["wj1-wlm-job"]
    assert pod["spec"]["containers"][0]["name"] == "jt2"
    assert names.ANNOTATION_BATCH not in pod["metadata"]["annotations"]
    request = json.loads(pod["metadata"]["annotations"][names.ANNOTATION_CONTAINER_JOB])
    assert request["image"] == "docker://alpine:3"
    assert request["options"]["binds"] == ["/a:/b"]
    assert request["options"]["cleanEnv"] is True
    assert request["resources"] == {"nodes": 1, "cpuPerNode": 2, "memPerNode": 512, "wallTime": 120}
    expressions = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][0]["matchExpressions"]
    assert [e["values"][0] for e in expressions] == ["0", "119", "511", "1"]


def test_a_stuck_staging_pod_says_why() -> None:
    world = readme_job()
    world.step()
    prepare = "prepare-and-results-job-prepare"
    world.pods[prepare] = unschedulable(
        world.pods[prepare], "0/3 nodes are available: 3 node(s) didn't match"
    )
    world.step()
    assert world.status["status"] == "Preparing"
    assert "cannot be scheduled: 0/3 nodes are available" in world.status["message"]
    pod = world.pods[prepare]
    pod["status"] = {
        "phase": "Pending",
        "containerStatuses": [
            {
                "name": "pr1",
                "state": {"waiting": {"reason": "CreateContainerError", "message": "no such file"}},
            }
        ],
    }
    world.step()
    assert "CreateContainerError: no such file" in world.status["message"]


def test_prepare_needs_an_agent_host() -> None:
    world = readme_job()
    for node in world.nodes:
        del node["metadata"]["labels"][names.LABEL_AGENT_HOST]
    assert creates(world.step()) == []
    assert world.status["status"] == "Pending"
    assert "agent-host label" in world.status["message"]


def test_prepare_without_any_virtual_node() -> None:
    world = readme_job()
    world.nodes = []
    world.step()
    assert world.status["message"] == "no virtual node (partition) is registered"


def test_long_names_still_make_valid_labels() -> None:
    from wlmvk.operator.pods import LABEL_JOB, label_value

    name = "a" * 60 + "-" + "b" * 60
    world = World(slurmjob(name), [])
    world.step()
    value = world.pods[f"{name}-job"]["metadata"]["labels"][LABEL_JOB]
    assert len(value) <= 63
    assert value == label_value(name) != label_value(name[:-1] + "c")
    assert label_value("short") == "short"


# -- a pod the API server refuses ------------------------------------------------------------------------


def test_a_forbidden_pod_keeps_the_status_and_says_why_once() -> None:
    world = readme_job()
    world.step()
    body = world.body
    forbidden = "pods is forbidden: hostPath volumes are not allowed here"
    first = reconcile.refused(body, "p-prepare", forbidden, final=False, now="2026-12-03T15:00:00Z")
    patch = next(a for a in first if isinstance(a, reconcile.PatchStatus)).status
    text = f"pod p-prepare was refused: {forbidden}"
    assert (patch["status"], patch["reason"], patch["message"]) == ("Preparing", "PodRefused", text)
    assert [(c["status"], c["reason"]) for c in patch["conditions"] if c["type"] == "Admitted"] == [
        ("False", "PodRefused")
    ]
    assert patch["node"] == world.status["node"], "what the status said stays"
    assert [(a.type, a.reason, a.message) for a in first if isinstance(a, reconcile.Emit)] == [
        ("Warning", "PodRefused", text)
    ]
    # The same refusal on the next retry: nothing new to write, no second Event.
    again = reconcile.refused(
        {**body, "status": patch}, "p-prepare", forbidden, final=False, now="2026-12-03T15:01:00Z"
    )
    assert again == []


def test_an_invalid_pod_fails_the_resource() -> None:
    world = readme_job()
    world.step()
    body = world.body
    actions = reconcile.refused(
        body, "p-prepare", "spec.volumes[0]: Invalid", final=True, now="2026-12-03T15:00:00Z"
    )
    patch = next(a for a in actions if isinstance(a, reconcile.PatchStatus)).status
    assert (patch["status"], patch["reason"]) == ("Failed", "PodRejected")
    assert patch["completionTime"] == "2026-12-03T15:00:00Z"
    assert [(a.type, a.reason) for a in actions if isinstance(a, reconcile.Emit)] == [
        ("Warning", "PodRejected")
    ]


def test_a_refused_resource_is_admitted_once_its_pod_is_created() -> None:
    world = readme_job()
    forbidden = "pods is forbidden: not now"
    refusal = reconcile.refused(world.body, "p", forbidden, final=False, now="t")
    world.body = {
        **world.body,
        "status": next(a for a in refusal if isinstance(a, reconcile.PatchStatus)).status,
    }
    assert creates(world.step()) == ["prepare-and-results-job-prepare"]
    assert [(c["status"], c["reason"]) for c in world.status["conditions"] if c["type"] == "Admitted"] == [
        ("True", "Admitted")
    ]
    assert world.status["reason"] == "Preparing"


def test_no_working_dir_on_a_node_whose_original_red_box_ignores_it() -> None:
    node = virtual_node()
    node["metadata"]["annotations"] = {names.ANNOTATION_WORKING_DIR_IGNORED: "true"}
    world = World(slurmjob(), [node])
    world.step()
    assert world.status["workingDir"] == "/jobs/default/sj1-u-1", "no node yet: the one asked for"
    name = node["metadata"]["name"]
    world.pods["sj1-job"] = scheduled(world.pods["sj1-job"], name, job_id="7", phase="Running")
    world.step()
    assert world.status["node"] == name
    assert "workingDir" not in world.status
