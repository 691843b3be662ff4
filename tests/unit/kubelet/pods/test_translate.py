from __future__ import annotations

import shlex

import pytest

from tests.unit.kubelet.podbodies import batch_pod, pod
from wlmvk.core import names
from wlmvk.core.jobs import GpuKind, JobSpec, PartitionResources
from wlmvk.kubelet.pods.environment import ExecContext, exec_context
from wlmvk.kubelet.pods.translate import Rejection, Target, pod_to_job, target
from wlmvk.slurm import sbatch

DEBUG = Target("debug")


def job(body: dict[str, object], target: Target = DEBUG) -> JobSpec:
    result = pod_to_job(body, target)
    assert isinstance(result, JobSpec), result
    return result


def rejection(body: dict[str, object], target: Target = DEBUG) -> Rejection:
    result = pod_to_job(body, target)
    assert isinstance(result, Rejection), result
    return result


def sbatch_lines(spec: JobSpec) -> list[str]:
    return [f"#SBATCH --{d.name}={d.value}" for d in sbatch.directives(spec.script)]


def test_plain_pod_becomes_a_shell_script_running_its_command() -> None:
    spec = job(pod())
    assert spec.script.startswith("#!/bin/sh\n")
    assert "exec echo 'hello world'\n" in spec.script
    assert spec.partition == "debug"
    assert spec.idempotency_key == "0b5c1a9e-6f1d-4f3b-9c1e-2a7d3c4b5e6f"
    assert spec.name == "cow", "the pod's name is the job's default name"
    assert not any("--job-name" in line for line in sbatch_lines(spec)), "red-box's command line carries it"


def test_args_follow_command_and_are_quoted() -> None:
    spec = job(pod(container={"command": ["sh", "-c"], "args": ["echo $HOME; exit 3"]}))
    assert "exec sh -c 'echo $HOME; exit 3'" in spec.script


def test_env_and_working_dir_are_exported_before_the_command() -> None:
    spec = job(
        pod(
            container={
                "env": [
                    {"name": "GREETING", "value": "it's fine"},
                    {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                ],
                "workingDir": "/tmp/work dir",
            }
        )
    )
    lines = spec.script.splitlines()
    assert "export GREETING=" + shlex.quote("it's fine") in lines
    assert "export POD=cow" in lines
    assert "export NODE=slurm-vm-debug" in lines
    assert "cd '/tmp/work dir' || exit 1" in lines
    assert lines.index("cd '/tmp/work dir' || exit 1") < next(
        i for i, x in enumerate(lines) if x.startswith("exec")
    )


def test_an_exec_gets_the_env_and_working_dir_the_script_exports() -> None:
    body = pod(
        container={
            "env": [
                {"name": "GREETING", "value": "it's fine"},
                {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            ],
            "workingDir": "work dir",
        }
    )
    assert exec_context(body) == ExecContext(
        env={"GREETING": "it's fine", "POD": "cow"}, working_dir="work dir"
    )


def test_an_exec_into_a_scripted_job_gets_no_container_env_or_directory() -> None:
    scripted = batch_pod("#!/bin/sh\nexport GREETING=hi\n", container={"env": [{"name": "A", "value": "1"}]})
    assert exec_context(scripted) == ExecContext()
    unsupported = pod(container={"env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s"}}}]})
    assert exec_context(unsupported) == ExecContext()


def test_label_field_refs_resolve() -> None:
    body = pod(
        metadata={"labels": {"app": "x"}},
        container={
            "env": [{"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}]
        },
    )
    assert "export APP=x" in job(body).script


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"requests": {"cpu": "2"}}, ["#SBATCH --cpus-per-task=2"]),
        ({"requests": {"cpu": "500m"}}, ["#SBATCH --cpus-per-task=1"]),
        ({"requests": {"cpu": "1"}, "limits": {"cpu": "3"}}, ["#SBATCH --cpus-per-task=3"]),
        ({"requests": {"memory": "1Gi"}}, ["#SBATCH --mem=1024M"]),
        ({"limits": {"memory": "100M"}}, ["#SBATCH --mem=96M"]),
        ({"limits": {"memory": "1500Ki"}}, ["#SBATCH --mem=2M"]),
        ({"limits": {"nvidia.com/gpu": "1"}}, ["#SBATCH --gres=gpu:1"]),
        ({"limits": {"nvidia.com/gpu": 2}}, ["#SBATCH --gres=gpu:2"]),
    ],
)
def test_resources_become_sbatch_options(resources: dict[str, object], expected: list[str]) -> None:
    lines = sbatch_lines(job(pod(container={"resources": resources})))
    for line in expected:
        assert line in lines


def test_active_deadline_becomes_time_in_whole_minutes() -> None:
    assert "#SBATCH --time=2" in sbatch_lines(job(pod(spec={"activeDeadlineSeconds": 61})))
    assert "#SBATCH --time=1" in sbatch_lines(job(pod(spec={"activeDeadlineSeconds": 5})))
    assert not any("--time" in x for x in sbatch_lines(job(pod())))


def test_batch_annotation_runs_the_script_as_written_with_derived_options_after_the_shebang() -> None:
    script = "#!/bin/bash\n#SBATCH --nodes=1\nsrun hostname\n"
    body = batch_pod(script)
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2"}}
    lines = job(body).script.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert lines[-1] == "srun hostname"
    assert "#SBATCH --nodes=1" in lines
    assert lines[1] == "#SBATCH --cpus-per-task=2"


def test_script_directives_win_over_derived_options() -> None:
    script = "#!/bin/sh\n#SBATCH -c 4\n#SBATCH --mem-per-cpu=100\n#SBATCH -t 5\n#SBATCH -J mine\necho\n"
    body = batch_pod(script, spec={"activeDeadlineSeconds": 600})
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2", "memory": "1Gi"}}
    spec = job(body)
    assert spec.script == script


def test_sbatch_lines_after_the_first_command_do_not_count() -> None:
    script = "#!/bin/sh\necho hi\n#SBATCH --mem=1\n"
    body = batch_pod(script)
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": "2Mi"}}
    assert sbatch_lines(job(body)) == ["#SBATCH --mem=2M"]


def test_an_indented_sbatch_line_is_a_comment_to_sbatch_so_the_derived_option_is_added() -> None:
    # Before core.sbatch the kubelet stripped indentation: "  #SBATCH --mem=4G" counted as
    # set, sbatch ignored it, and the job ran with neither memory request.
    script = "#!/bin/sh\n  #SBATCH --mem=4G\nsrun hostname\n"
    body = batch_pod(script)
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": "1Gi"}}
    assert sbatch_lines(job(body)) == ["#SBATCH --mem=1024M"]


def test_a_quantity_the_api_server_accepts_is_read() -> None:
    # "500u" is a valid quantity (kube-apiserver keeps it); the kubelet's own parser refused it.
    spec = job(pod(container={"resources": {"limits": {"cpu": "500u", "memory": "100n"}}}))
    assert sbatch_lines(spec) == ["#SBATCH --cpus-per-task=1", "#SBATCH --mem=1M"]


def test_an_unreadable_directive_is_a_rejection_with_its_line() -> None:
    refused = rejection(batch_pod('#!/bin/sh\n#SBATCH --comment="open\necho\n'))
    assert refused.reason == "InvalidBatchScript"
    assert refused.message.startswith("line 2: cannot read #SBATCH directive")


def test_script_without_shebang_gets_one() -> None:
    spec = job(batch_pod("echo hi\n"))
    assert spec.script.splitlines()[0] == "#!/bin/sh"
    assert spec.script.rstrip().endswith("echo hi")


def test_working_dir_comes_from_the_annotation_else_the_jobs_root() -> None:
    annotated = batch_pod(
        "#!/bin/sh\necho\n", metadata={"annotations": {names.ANNOTATION_WORKING_DIR: "/w/sj"}}
    )
    annotated["metadata"]["annotations"][names.ANNOTATION_BATCH] = "#!/bin/sh\necho\n"
    assert job(annotated, Target("debug", jobs_root="/jobs")).working_dir == "/w/sj"
    assert job(pod(), Target("debug", jobs_root="/jobs/")).working_dir == "/jobs/default/cow-0b5c1a9e"
    assert job(pod(), Target("debug")).working_dir == ""


def test_container_runtime_runs_the_image_through_apptainer() -> None:
    spec = job(
        pod(container={"image": "alpine:3", "command": ["cat", "/etc/os-release"]}), Target("gpu", True)
    )
    assert 'exec "$rt" --quiet exec docker://alpine:3 cat /etc/os-release' in spec.script
    assert "apptainer" in spec.script


@pytest.mark.parametrize(
    ("site", "flags"), [((), ""), (("--rocm",), " --rocm"), (("--nv", "--nvccli"), " --nv --nvccli")]
)
def test_a_gpu_pods_image_runs_with_the_sites_gpu_flags(site: tuple[str, ...], flags: str) -> None:
    body = pod(
        container={
            "image": "rocm:6",
            "command": ["rocm-smi"],
            "resources": {"limits": {"nvidia.com/gpu": "1"}},
        }
    )
    runs_images = PartitionResources("gpu", 1, 8, 16000, None, gpu_per_node=2, container_runtime=True)
    spec = job(body, target(runs_images, "", {}, site))
    assert f'exec "$rt" --quiet exec{flags} docker://rocm:6 rocm-smi' in spec.script.splitlines()


def test_container_runtime_without_command_runs_the_image_entrypoint() -> None:
    body = pod()
    del body["spec"]["containers"][0]["command"]
    body["spec"]["containers"][0]["args"] = ["--flag"]
    spec = job(body, Target("gpu", True))
    assert 'exec "$rt" --quiet run docker://busybox:1.36 --flag' in spec.script


def test_no_runtime_and_no_command_is_rejected() -> None:
    body = pod()
    del body["spec"]["containers"][0]["command"]
    assert rejection(body).reason == "NoCommand"


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"spec": {"initContainers": [{"name": "i", "image": "x"}]}}, "UnsupportedInitContainers"),
        ({"container": {"ports": [{"containerPort": 80}]}}, "UnsupportedPorts"),
        ({"container": {"envFrom": [{"configMapRef": {"name": "c"}}]}}, "UnsupportedEnv"),
        (
            {"container": {"env": [{"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}},
            "UnsupportedEnv",
        ),
        ({"container": {"env": [{"name": "bad-name", "value": "1"}]}}, "UnsupportedEnv"),
        ({"spec": {"volumes": [{"name": "data", "hostPath": {"path": "/data"}}]}}, "UnsupportedVolume"),
        (
            {"spec": {"volumes": [{"name": "pvc", "persistentVolumeClaim": {"claimName": "c"}}]}},
            "UnsupportedVolume",
        ),
        ({"container": {"resources": {"limits": {"cpu": "lots"}}}}, "InvalidResources"),
        ({"spec": {"activeDeadlineSeconds": "soon"}}, "InvalidResources"),
        # An API server cannot decode this pod (400), but a pod body is never trusted.
        ({"container": {"resources": {"limits": ["cpu", "1"]}}}, "InvalidResources"),
    ],
)
def test_unsupported_features_are_rejected_with_a_reason(change: dict[str, object], reason: str) -> None:
    found = rejection(pod(**change))
    assert found.reason == reason
    assert found.message


def test_several_containers_are_rejected() -> None:
    body = pod()
    body["spec"]["containers"].append({"name": "sidecar", "image": "x", "command": ["true"]})
    assert rejection(body).reason == "UnsupportedContainers"


def test_empty_batch_annotation_is_rejected() -> None:
    assert rejection(batch_pod("  \n")).reason == "EmptyBatchScript"


def test_ignored_volumes_pass() -> None:
    body = pod(spec={"volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "info", "downwardAPI": {}}]})
    assert isinstance(pod_to_job(body, DEBUG), JobSpec)


def test_wlmjob_pod_becomes_a_container_job() -> None:
    from wlmvk.core import containerjob
    from wlmvk.core.jobs import ContainerJobSpec, ContainerOptions

    request = ContainerJobSpec(
        image="library://sylabsed/examples/lolcow",
        nodes=1,
        cpu_per_node=1,
        mem_per_node=256,
        wall_time=300,
        options=ContainerOptions(clear_env=True),
    )
    body = pod(
        metadata={
            "annotations": {
                names.ANNOTATION_CONTAINER_JOB: containerjob.encode(request),
                names.ANNOTATION_WORKING_DIR: "/w/cow",
            }
        }
    )
    result = pod_to_job(body, Target("debug"))
    assert isinstance(result, ContainerJobSpec)
    assert result.image == request.image
    assert (result.cpu_per_node, result.mem_per_node, result.wall_time) == (1, 256, 300)
    assert result.options.clear_env
    assert (result.partition, result.name, result.working_dir) == ("debug", "cow", "/w/cow")
    assert result.idempotency_key == "0b5c1a9e-6f1d-4f3b-9c1e-2a7d3c4b5e6f"


def test_broken_container_job_annotation_is_rejected() -> None:
    body = pod(metadata={"annotations": {names.ANNOTATION_CONTAINER_JOB: "{not json"}})
    assert rejection(body).reason == "InvalidContainerJob"


# A partition of one node with Gres=gpu:tesla:2,gpu:1g.10gb:4 as red-box reports it.
GPUS = target(
    PartitionResources(
        "gpu", 1, 8, 16000, None, gpu_per_node=6,
        gpu_kinds=(GpuKind("tesla", 2, 2, 1), GpuKind("1g.10gb", 4, 4, 0)),
    ),
    "/jobs",
    {"nvidia.com/t4": "tesla"},
)  # fmt: skip


@pytest.mark.parametrize(
    ("limits", "line"),
    [
        ({"nvidia.com/gpu": "6"}, "#SBATCH --gres=gpu:6"),
        ({"nvidia.com/t4": "2"}, "#SBATCH --gres=gpu:tesla:2"),
        ({"nvidia.com/mig-1g.10gb": "4"}, "#SBATCH --gres=gpu:1g.10gb:4"),
        ({"nvidia.com/mig-1g.10gb": "1", "cpu": "1"}, "#SBATCH --gres=gpu:1g.10gb:1"),
    ],
)
def test_typed_and_mig_gpus_become_a_typed_gres(limits: dict[str, str], line: str) -> None:
    lines = sbatch_lines(job(pod(container={"resources": {"limits": limits, "requests": limits}}), GPUS))
    assert [x for x in lines if "gres" in x] == [line]


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (
            {"nvidia.com/gpu": "7"},
            "the pod asks for nvidia.com/gpu: 7 (--gres=gpu:7) but a node of partition 'gpu' has at most 6"
            " (nvidia.com/gpu: 6, nvidia.com/mig-1g.10gb: 4, nvidia.com/t4: 2)",
        ),
        (
            {"nvidia.com/mig-1g.10gb": "5"},
            "the pod asks for nvidia.com/mig-1g.10gb: 5 (--gres=gpu:1g.10gb:5) but a node of partition 'gpu'"
            " has at most 4 (nvidia.com/gpu: 6, nvidia.com/mig-1g.10gb: 4, nvidia.com/t4: 2)",
        ),
        (
            {"nvidia.com/mig-3g.20gb": "1"},
            "the pod asks for nvidia.com/mig-3g.20gb: 1 (--gres=gpu:3g.20gb:1) but a node of partition 'gpu'"
            " has at most 0 (nvidia.com/gpu: 6, nvidia.com/mig-1g.10gb: 4, nvidia.com/t4: 2)",
        ),
        (
            {"nvidia.com/gpu.tesla": "1"},
            "the pod asks for nvidia.com/gpu.tesla: 1 (--gres=gpu:tesla:1) but a node of partition 'gpu'"
            " has at most 0 (nvidia.com/gpu: 6, nvidia.com/mig-1g.10gb: 4, nvidia.com/t4: 2)",
        ),
    ],
)
def test_gpus_a_partition_never_has_are_refused(limits: dict[str, str], message: str) -> None:
    refused = rejection(pod(container={"resources": {"limits": limits}}), GPUS)
    assert refused == Rejection("GPUsUnavailable", message)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        (
            {"nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "1"},
            "asks for nvidia.com/gpu: 1 and nvidia.com/mig-1g.10gb: 1: a container's GPUs are of one kind"
            " (one resource name)",
        ),
        (
            {"nvidia.com/mig-1g.10gb": "0.5"},
            "nvidia.com/mig-1g.10gb: a GPU count is a whole number, not '0.5'",
        ),
    ],
)
def test_two_gpu_kinds_or_a_fraction_are_invalid_resources(limits: dict[str, str], message: str) -> None:
    refused = rejection(pod(container={"resources": {"limits": limits}}), GPUS)
    assert refused == Rejection("InvalidResources", message)


def test_gpus_are_not_judged_where_red_box_does_not_report_them_per_type() -> None:
    """An original red-box, or an older wlmvk one: Slurm judges (sbatch refuses what no node has)."""
    unknown = target(PartitionResources("gpu", 1, 8, 16000, None), "/jobs", {})
    assert unknown.gpus is None
    lines = sbatch_lines(
        job(pod(container={"resources": {"limits": {"nvidia.com/mig-3g.20gb": "9"}}}), unknown)
    )
    assert "#SBATCH --gres=gpu:3g.20gb:9" in lines


SITE = Target("debug", container_runtime=True, image_dir="/srv/sif", images=("busybox_1.36.sif", "tools.sif"))


def test_a_plain_pods_image_runs_the_sif_the_site_holds_for_it() -> None:
    lines = job(pod(), SITE).script.splitlines()
    assert lines[-2:] == [
        "if command -v apptainer >/dev/null 2>&1; then rt=apptainer; else rt=singularity; fi",
        "exec \"$rt\" --quiet exec /srv/sif/busybox_1.36.sif echo 'hello world'",
    ]


@pytest.mark.parametrize(
    ("limits", "flags"),
    [
        ({}, ""),
        ({"nvidia.com/gpu": "0"}, ""),
        ({"nvidia.com/gpu": "1"}, " --nv"),
        ({"nvidia.com/mig-1g.10gb": "2"}, " --nv"),
        ({"nvidia.com/gpu.tesla": "1"}, " --nv"),
    ],
)
def test_a_plain_pods_image_gets_nv_when_the_pod_has_gpus(limits: dict[str, str], flags: str) -> None:
    body = pod(container={"resources": {"limits": {"cpu": "1", **limits}}})
    script = job(body, SITE).script
    assert (
        script.splitlines()[-1]
        == f"exec \"$rt\" --quiet exec{flags} /srv/sif/busybox_1.36.sif echo 'hello world'"
    )


def test_an_image_the_sites_directory_lacks_is_refused_naming_it() -> None:
    refused = rejection(pod(container={"image": "lolcow:2"}), SITE)
    assert refused == Rejection(
        "ImageNotFound",
        "image 'lolcow:2': no lolcow_2.sif in the site's image directory /srv/sif (red-box --image-dir),"
        " which holds busybox_1.36.sif, tools.sif",
    )


def test_without_a_sites_directory_an_image_is_pulled() -> None:
    target = Target("debug", container_runtime=True)
    assert "exec \"$rt\" --quiet exec docker://busybox:1.36 echo 'hello world'" in job(pod(), target).script
