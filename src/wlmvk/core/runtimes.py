"""Container runtimes: which one a login node uses, and the shell lines that run an image with it.

The one place where a runtime's command line is built. red-box builds a
WlmJob's batch script from ``job_lines`` with the runtime its
``--container-runtime`` setting chose (``choose``); the kubelet builds a
plain pod's image line from ``pod_lines``.

``auto`` takes the first of ``AUTO_ORDER`` that the login node has:
Apptainer, then Singularity (the original's runtimes, whose images and
options a WlmJob was written for), then Podman (an OCI runtime that runs
rootless: unprivileged user namespaces, no daemon).

The WlmJob options are Singularity's. For Podman they map to its flags where
they have a meaning, and are refused (``InvalidInput`` naming the option)
where they have none:

- ``binds`` ``src[:dest[:ro|rw]]`` -> ``--volume src:dest[:ro]``;
- ``cleanEnv`` false -> ``--env-host`` (Singularity passes the job's
  environment in by default, Podman does not);
- ``writable`` false -> ``--read-only`` (a Singularity image is read-only
  unless asked);
- ``pid`` false -> ``--pid=host`` (Singularity shares the host's PID
  namespace unless asked for its own);
- ``noPrivs`` -> ``--cap-drop=all``; ``hostName`` -> ``--hostname``;
- ``ipc`` and ``fakeRoot`` need no flag: Podman's IPC namespace is private
  already, and rootless Podman's root is the job owner (a fake root);
- ``allowUnsigned`` needs none: signatures follow Podman's policy.json;
- the job's working directory is bound and the container starts there, as
  Singularity does;
- ``app`` is refused: SCIF apps exist only in SIF images.

Images for Podman: ``docker://`` (a registry), ``oci:DIR[:TAG]`` (an OCI
layout), ``oci-archive:FILE`` (one as a tar), ``docker-archive:FILE``, or an
absolute path to a root filesystem directory (``--rootfs``). Sylabs'
``library://``, ``shub://`` and ``local.file`` (SIF) need Apptainer or
Singularity and are refused. The network is the host's, as Singularity's.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import ContainerOptions

APPTAINER = "apptainer"
SINGULARITY = "singularity"
PODMAN = "podman"
AUTO = "auto"
NONE = "none"
AUTO_ORDER = (APPTAINER, SINGULARITY, PODMAN)
SETTINGS = (AUTO, *AUTO_ORDER, NONE)
SIF_RUNTIMES = (APPTAINER, SINGULARITY)

_PODMAN_TRANSPORTS = ("docker://", "oci:", "oci-archive:", "docker-archive:")
_SIF_ONLY = ("library://", "shub://", "local.file")


def choose(setting: str, installed: Callable[[str], bool]) -> str:
    """The runtime ``setting`` picks on this login node, "" when none is installed."""
    if setting not in SETTINGS:
        raise InvalidInput(f"container runtime {setting!r}: use one of {', '.join(SETTINGS)}")
    if setting == NONE:
        return ""
    candidates = AUTO_ORDER if setting == AUTO else (setting,)
    return next((name for name in candidates if installed(name)), "")


def missing(setting: str) -> str:
    """Why a container job cannot run when ``choose`` found nothing, naming what was looked for."""
    if setting == NONE:
        return "red-box runs with --container-runtime none: container jobs are disabled"
    if setting == AUTO:
        return f"no container runtime on the Slurm side: none of {', '.join(AUTO_ORDER)} is installed"
    return f"the container runtime {setting} (red-box --container-runtime) is not installed on the Slurm side"


def search_path(runtime_path: str, path: str) -> str:
    """``path`` with the directories of red-box's ``--runtime-path`` ahead of it, each once."""
    ahead = [d for d in runtime_path.split(":") if d]
    return ":".join(dict.fromkeys([*ahead, *(d for d in path.split(":") if d)]))


def job_lines(
    runtime: str, image: str, options: ContainerOptions, *, pull_name: str, binary: str = ""
) -> list[str]:
    """Shell lines of a batch script that run ``image`` with ``runtime``; InvalidInput when it cannot.

    ``binary`` is the runtime's program as the login node found it (an absolute path
    where red-box's ``--runtime-path`` put it); the runtime's name, found on the job's
    PATH, when empty.
    """
    program = binary or runtime
    if runtime == PODMAN:
        argv = [program, *podman_argv(image, options)[1:]]
        at = argv.index("run") + 1
        # Singularity binds the job's working directory and starts there; the
        # shell expands $PWD when the job runs.
        here = '--volume="$PWD:$PWD" --workdir="$PWD"'
        return [f"srun {shlex.join(argv[:at])} {here} {shlex.join(argv[at:])}"]
    if runtime in SIF_RUNTIMES:
        return _sif_lines(runtime, program, image, options, pull_name=pull_name)
    raise InvalidInput(f"unknown container runtime {runtime!r}")


def podman_argv(image: str, options: ContainerOptions, command: Sequence[str] = ()) -> list[str]:
    """``podman run`` of ``image`` with the WlmJob ``options`` mapped to Podman's flags."""
    if options.app:
        raise InvalidInput(f"option app={options.app!r}: SCIF apps exist only in SIF images (Apptainer)")
    argv = ["podman", "--log-level=error", "run", "--quiet", "--rm", "--network=host"]
    for bind in options.binds:
        argv.append(f"--volume={_podman_bind(bind)}")
    if not options.clear_env:
        argv.append("--env-host")
    if not options.writable:
        argv.append("--read-only")
    if not options.pid:
        argv.append("--pid=host")
    if options.no_privs:
        argv.append("--cap-drop=all")
    if options.host_name:
        argv.append(f"--hostname={options.host_name}")
    return [*argv, *_podman_image(image), *command]


def _podman_image(image: str) -> list[str]:
    if image.startswith(_SIF_ONLY):
        raise InvalidInput(f"image {image!r} is a Sylabs/SIF image: it needs Apptainer or Singularity")
    if image.startswith(_PODMAN_TRANSPORTS):
        return [image]
    if image.startswith("/"):
        return ["--rootfs", image]
    if "://" in image:
        raise InvalidInput(
            f"image {image!r}: Podman runs docker://, oci:, oci-archive:, docker-archive: or a root directory"
        )
    return [image]


def _podman_bind(bind: str) -> str:
    parts = bind.split(":")
    if not parts[0] or len(parts) > 3 or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise InvalidInput(f"bind {bind!r}: use SRC[:DEST[:ro|rw]]")
    source = parts[0]
    dest = parts[1] if len(parts) > 1 and parts[1] else source
    return f"{source}:{dest}:ro" if len(parts) == 3 and parts[2] == "ro" else f"{source}:{dest}"


def _sif_lines(
    runtime: str, program: str, image: str, options: ContainerOptions, *, pull_name: str
) -> list[str]:
    quote = shlex.quote
    flags = []
    if options.app:
        flags.append(f"--app={quote(options.app)}")
    if options.host_name:
        flags.append(f"--hostname={quote(options.host_name)}")
    if options.binds:
        flags.append(f"--bind={quote(','.join(options.binds))}")
    for enabled, flag in (
        (options.clear_env, "--cleanenv"),
        (options.fake_root, "--fakeroot"),
        (options.ipc, "--ipc"),
        (options.pid, "--pid"),
        (options.no_privs, "--no-privs"),
        (options.writable, "--writable"),
    ):
        if enabled:
            flags.append(flag)
    # --quiet: errors only, as Podman's --log-level=error; the job's output is the image's.
    srun = f"srun {quote(program)} --quiet"
    run = " ".join([srun, "run", *flags])
    if image.startswith("local.file"):
        local = image[len("local.file") :]
        local = local[3:] if local.startswith("://") else local.removeprefix(":")
        verify = [] if options.allow_unsigned else [f"{srun} verify {quote(local)} || exit"]
        return [*verify, f"{run} {quote(local)} || exit"]
    unsigned = " -U" if options.allow_unsigned and runtime == SINGULARITY else ""
    return [
        f"{srun} pull{unsigned} --name {quote(pull_name)} {quote(image)} || exit",
        f"{run} {quote(pull_name)}",
        "status=$?",
        f"rm -f {quote(pull_name)}",
        "exit $status",
    ]


def sif_name(image: str) -> str:
    """The SIF file a plain pod's ``image`` names in a site's image directory: the reference
    without its transport, '/', ':' and '@' made '_', and ``.sif`` (``site/tools:2`` ->
    ``site_tools_2.sif``, ``busybox`` -> ``busybox.sif``)."""
    name = image.split("://", 1)[-1]
    return "".join("_" if c in "/:@" else c for c in name) + ".sif"


# What a SIF runtime is given when the job has GPUs: the host's NVIDIA driver libraries and
# device files bound into the container (Apptainer and Singularity alike). Without a driver on
# the node Apptainer only warns ("could not find any nv files") and runs the container.
# A site whose GPUs want others says so (the kubelet's --sif-gpu-flags: ``--rocm`` for AMD's,
# ``--nvccli`` for NVIDIA's container CLI); ``check_gpu_flags`` is the rule for what it may give.
GPU_FLAGS = ("--nv",)
_GPU_FLAG = re.compile(r"--[a-z][a-z0-9-]*(=[A-Za-z0-9_.,:/-]+)?")


def check_gpu_flags(flags: Sequence[str]) -> tuple[str, ...]:
    """``flags`` as given for GPU jobs, each an option (``--nv``, ``--rocm``, ``--nvccli``,
    ``--opt=value``); ``InvalidInput`` naming the first that is not."""
    for flag in flags:
        if not _GPU_FLAG.fullmatch(flag):
            raise InvalidInput(f"SIF runtime GPU flag {flag!r}: expected an option such as --nv or --rocm")
    return tuple(flags)


def gpu_flags(gpus: int, site: Sequence[str] = GPU_FLAGS) -> tuple[str, ...]:
    """The SIF runtime's flags for a job that was given ``gpus`` GPUs (any kind): the site's
    (``--nv`` unless it says otherwise) when it has one or more, nothing otherwise."""
    return tuple(site) if gpus > 0 else ()


def pod_lines(
    image: str,
    command: Sequence[str],
    args: Sequence[str],
    *,
    gpus: int = 0,
    gpu_flags_of_site: Sequence[str] = GPU_FLAGS,
) -> list[str]:
    """The lines that run a plain pod's ``image`` through Apptainer or Singularity, whichever is there.

    A pod's command replaces the image's entrypoint (``exec``); without one the
    image's runscript gets the args (``run``). A bare name is a Docker Hub image; an absolute
    path is a SIF file (from a site's image directory: ``sif_name``). A pod given ``gpus``
    GPUs gets ``gpu_flags`` (the site's, ``gpu_flags_of_site``).
    """
    reference = image if "://" in image or image.startswith("/") else f"docker://{image}"
    pick = f"if command -v {APPTAINER} >/dev/null 2>&1; then rt={APPTAINER}; else rt={SINGULARITY}; fi"
    flags = "".join(f" {shlex.quote(flag)}" for flag in gpu_flags(gpus, gpu_flags_of_site))
    if command:
        return [
            pick,
            f'exec "$rt" --quiet exec{flags} {shlex.quote(reference)} {shlex.join([*command, *args])}',
        ]
    return [pick, f'exec "$rt" --quiet run{flags} {shlex.quote(reference)} {shlex.join(args)}'.rstrip()]
