"""red-box's command line: its flags, and their translation into :class:`~wlmvk.redbox.config.Settings`.

What can be checked before anything starts is checked here, each error naming its flag: a
``--tcp`` without mutual TLS, a ``--work-dir``, ``--image-dir`` or ``--runtime-path`` directory
that does not exist, a malformed ``[HOST:]PORT``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from wlmvk.core import runtimes
from wlmvk.core.errors import InvalidInput
from wlmvk.redbox import config as cfg
from wlmvk.slurm.tenancy import Allowed


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="red-box",
        description="The WLM gRPC daemon: serves the WorkloadManager API over Slurm's command line tools.",
        allow_abbrev=False,
    )
    p.add_argument(
        "-socket",
        "--socket",
        default=cfg.DEFAULT_SOCKET,
        help="Unix socket to listen on (created mode 0600 with its parent directory; default %(default)s)",
    )
    p.add_argument(
        "-config",
        "--config",
        default="",
        help="YAML file of per-partition overrides: nodes, cpu_per_node, mem_per_node (MB), "
        "wall_time (e.g. 10h), additional_features [{name, version, quantity}]",
    )
    p.add_argument(
        "--work-dir",
        default="",
        help="red-box's working root: jobs run here by default and relative paths resolve against it "
        "(default: the current directory)",
    )
    p.add_argument(
        "--allow-root",
        action="append",
        default=[],
        metavar="PATH",
        help="another directory the file rpcs and job working directories may use (repeatable)",
    )
    p.add_argument(
        "--state-dir",
        default="",
        help="where red-box records job states and idempotency keys across restarts "
        "(default: ~/.local/state/wlmvk-red-box)",
    )
    p.add_argument(
        "--original-api-only",
        action="store_true",
        help="serve only the original red-box rpcs; wlmvk's additions answer UNIMPLEMENTED",
    )
    p.add_argument(
        "--tcp",
        default="",
        metavar="[HOST:]PORT",
        help="also listen on TCP with mutual TLS (requires --tls-cert, --tls-key and --tls-client-ca); "
        "HOST defaults to 127.0.0.1: give 0.0.0.0 or an address to be reached from other hosts",
    )
    p.add_argument("--tls-cert", default="", help="PEM certificate chain for the TCP listener")
    p.add_argument("--tls-key", default="", help="PEM private key for the TCP listener")
    p.add_argument(
        "--tls-client-ca",
        default="",
        help="PEM bundle of the CA(s) whose client certificates the TCP listener accepts; "
        "a client without one is refused at the handshake",
    )
    p.add_argument(
        "--slurm-timeout",
        type=float,
        default=30.0,
        help="seconds before a hanging Slurm command is killed (UNAVAILABLE; default %(default)s)",
    )
    p.add_argument(
        "--max-script-bytes",
        type=int,
        default=1024 * 1024,
        help="largest batch script accepted (default %(default)s)",
    )
    p.add_argument(
        "--poll-interval",
        type=float,
        default=8.0,
        help="the longest an unfinished job goes without a look in Slurm (a client's JobStates counts), "
        "so its end is recorded; keep it below Slurm's MinJobAge; 0 = off (default %(default)s)",
    )
    p.add_argument(
        "--container-runtime",
        choices=runtimes.SETTINGS,
        default=runtimes.AUTO,
        help="what runs WlmJob images: auto takes the first installed of "
        f"{', '.join(runtimes.AUTO_ORDER)}; none refuses container jobs (default %(default)s)",
    )
    p.add_argument(
        "--runtime-path",
        default="",
        metavar="DIR[:DIR...]",
        help="directories searched for the container runtime ahead of PATH, by red-box and by its jobs "
        "(a plain pod's image line), e.g. a built Apptainer's bin (dev/scripts/apptainer-local path); "
        "default: PATH alone",
    )
    p.add_argument(
        "--image-dir",
        default="",
        metavar="DIR",
        help="a directory of SIF files on the Slurm side that plain pods' images name: image NAME[:TAG] "
        "runs DIR/NAME[_TAG].sif ('/' and ':' become '_') through Apptainer/Singularity, and an image "
        "with no file there fails its pod (ImageNotFound); default: images are pulled (docker://)",
    )
    p.add_argument(
        "--slurm-api",
        choices=cfg.SLURM_APIS,
        default="auto",
        help="how jobs are submitted and cancelled: cli runs sbatch and scancel; rest runs red-box's own "
        "slurmrestd (as red-box's user, on a private socket; restarted when it dies, sbatch used "
        "meanwhile) and refuses to start without it; auto is rest when slurmrestd is installed and "
        "speaks an OpenAPI version red-box knows, else cli (default %(default)s)",
    )
    for kind, what in (("accounts", "Slurm accounts"), ("qos", "QoS"), ("partitions", "partitions")):
        p.add_argument(
            f"--allowed-{kind}",
            default="",
            metavar="A,B",
            help=f"the {what} this red-box's jobs may name (comma-separated; default: any): a job naming"
            " another in its script, partition or SBATCH_* environment is refused (docs/tenancy.md)",
        )
    p.add_argument(
        "--stats-file",
        default="",
        metavar="PATH",
        help="debugging: on SIGUSR1 write red-box's tallies (key index scans, garbage collections by "
        "generation and their seconds, CPU seconds) as JSON to PATH; default: none",
    )
    p.add_argument("--log-level", default="info", help="debug, info, warning or error (default %(default)s)")
    return p


def _names(value: str) -> tuple[str, ...]:
    return tuple(name for name in (part.strip() for part in value.split(",")) if name)


def settings_from(args: argparse.Namespace) -> cfg.Settings:
    work_dir = Path(os.path.realpath(args.work_dir or os.getcwd()))
    if not work_dir.is_dir():
        raise InvalidInput(f"--work-dir {work_dir}: no such directory")
    state_dir = Path(args.state_dir) if args.state_dir else cfg.Settings().state_dir
    if args.tcp:
        missing = [
            flag
            for flag, value in (
                ("--tls-cert", args.tls_cert),
                ("--tls-key", args.tls_key),
                ("--tls-client-ca", args.tls_client_ca),
            )
            if not value
        ]
        if missing:
            # Whoever reaches the port runs jobs and reads files as the job owner:
            # only clients with a certificate of a CA we were told to trust may.
            raise InvalidInput(f"--tcp needs {', '.join(missing)}: the TCP listener accepts only mutual TLS")
        tcp_address(args.tcp)
    if args.image_dir and not os.path.isdir(args.image_dir):
        raise InvalidInput(f"--image-dir {args.image_dir}: no such directory")
    for directory in filter(None, args.runtime_path.split(":")):
        if not os.path.isdir(directory):
            raise InvalidInput(f"--runtime-path {directory}: no such directory")
    return cfg.Settings(
        socket=args.socket,
        config=args.config,
        work_dir=work_dir,
        allow_roots=tuple(Path(os.path.realpath(r)) for r in args.allow_root),
        state_dir=state_dir,
        original_api_only=args.original_api_only,
        tcp=args.tcp,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        tls_client_ca=args.tls_client_ca,
        slurm_timeout=args.slurm_timeout,
        max_script_bytes=args.max_script_bytes,
        poll_interval=args.poll_interval,
        log_level=args.log_level,
        container_runtime=args.container_runtime,
        runtime_path=args.runtime_path,
        image_dir=os.path.realpath(args.image_dir) if args.image_dir else "",
        slurm_api=args.slurm_api,
        stats_file=args.stats_file,
        allowed=Allowed(
            _names(args.allowed_accounts), _names(args.allowed_qos), _names(args.allowed_partitions)
        ),
    )


def tcp_address(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` of ``--tcp``; the host defaults to loopback, never to every interface."""
    host, _, port = value.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        number = -1
    if not 0 <= number <= 65535:
        raise InvalidInput(f"--tcp {value}: not [HOST:]PORT")
    return host.strip("[]") or "127.0.0.1", number
