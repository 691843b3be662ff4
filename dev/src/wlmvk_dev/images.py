"""Tiny container images built here, for the demo and the tests: no registry is reachable.

``busybox_rootfs`` lays out a root filesystem from Debian's busybox-static
(``/bin/busybox``, one static binary, with its applets as symlinks) and an
``/bin/entrypoint`` script; ``oci_archive`` packs such a directory into an
OCI image layout inside a tar (Podman's ``oci-archive:FILE``), with the
entrypoint as the image's command. Pure file writing, no tool needed.
``sif`` makes such a directory a SIF with ``apptainer build`` (its runscript
runs the entrypoint; SCIF apps under ``/scif/apps``), for Apptainer/Singularity.

``python -m wlmvk_dev.images FILE`` builds the image that examples/wlmjob.yaml
names (``dev/scripts/container-local up`` runs it); ``python -m wlmvk_dev.images
FILE.sif APPTAINER`` builds the same image as a SIF with that ``apptainer``
(``dev/scripts/apptainer-local image``).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Mapping
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
APPLETS = (
    "sh", "echo", "cat", "ls", "id", "env", "hostname", "pwd", "sleep", "true", "touch", "mkdir",
    "readlink", "grep", "cut",
)  # fmt: skip


def busybox_rootfs(root: Path, entrypoint: str) -> Path:
    """A root filesystem under ``root`` whose ``/bin/entrypoint`` is the shell script ``entrypoint``."""
    (root / "bin").mkdir(parents=True, exist_ok=True)
    shutil.copy2(BUSYBOX, root / "bin" / "busybox")
    for applet in APPLETS:
        (root / "bin" / applet).symlink_to("busybox")
    script = root / "bin" / "entrypoint"
    script.write_text("#!/bin/sh\n" + entrypoint)
    script.chmod(0o755)
    for empty in ("tmp", "proc", "sys", "dev", "etc"):
        (root / empty).mkdir(exist_ok=True)
    for name in ("passwd", "group"):  # runtimes add the job owner's entry to files that exist
        (root / "etc" / name).touch()
    return root


def _blob(blobs: tarfile.TarFile, data: bytes, media_type: str) -> dict[str, object]:
    digest = hashlib.sha256(data).hexdigest()
    info = tarfile.TarInfo(f"blobs/sha256/{digest}")
    info.size = len(data)
    info.mode = 0o644
    blobs.addfile(info, io.BytesIO(data))
    return {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(data)}


def oci_archive(rootfs: Path, dest: Path, *, tag: str = "latest") -> Path:
    """``rootfs`` as a one-layer OCI image in a tar at ``dest``, running ``/bin/entrypoint``."""
    layer_tar = io.BytesIO()
    with tarfile.open(fileobj=layer_tar, mode="w") as layer:
        for path in sorted(rootfs.rglob("*")):
            layer.add(path, arcname=str(path.relative_to(rootfs)), recursive=False)
    diff_id = hashlib.sha256(layer_tar.getvalue()).hexdigest()
    compressed = gzip.compress(layer_tar.getvalue(), mtime=0)
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Cmd": ["/bin/entrypoint"], "Env": ["PATH=/bin"]},
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
    }
    with tarfile.open(dest, mode="w") as archive:
        # Directories of their own: Apptainer (containers/image) unpacks the archive as the job
        # owner and fails to chown a directory it has to make up to root ("operation not permitted").
        for directory in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            archive.addfile(info)
        layer_ref = _blob(archive, compressed, "application/vnd.oci.image.layer.v1.tar+gzip")
        config_ref = _blob(archive, json.dumps(config).encode(), "application/vnd.oci.image.config.v1+json")
        manifest = {"schemaVersion": 2, "config": config_ref, "layers": [layer_ref]}
        manifest_ref = _blob(
            archive, json.dumps(manifest).encode(), "application/vnd.oci.image.manifest.v1+json"
        )
        manifest_ref["annotations"] = {"org.opencontainers.image.ref.name": tag}
        for name, doc in (
            ("oci-layout", {"imageLayoutVersion": "1.0.0"}),
            ("index.json", {"schemaVersion": 2, "manifests": [manifest_ref]}),
        ):
            data = json.dumps(doc).encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
    dest.chmod(0o644)
    return dest


RUNSCRIPT = '#!/bin/sh\nexec /bin/entrypoint "$@"\n'


def sif(rootfs: Path, dest: Path, *, apptainer: str, apps: Mapping[str, str] | None = None) -> Path:
    """``rootfs`` as a SIF at ``dest`` (readable by every job owner), built by ``apptainer``.

    Its runscript runs ``/bin/entrypoint`` with the run's arguments; each of ``apps`` (name ->
    shell script) is a SCIF app whose runscript is that script (``apptainer run --app NAME``).
    """
    meta = rootfs / ".singularity.d"
    meta.mkdir(exist_ok=True)
    _script(meta / "runscript", RUNSCRIPT)
    for name in ("localtime", "hosts"):  # the points of Apptainer's default binds: a writable
        (rootfs / "etc" / name).touch()  # container warns of each missing one, even with --quiet
    for name, script in (apps or {}).items():
        app = rootfs / "scif" / "apps" / name / "scif"
        app.mkdir(parents=True, exist_ok=True)
        _script(app / "runscript", "#!/bin/sh\n" + script)
    built = subprocess.run(
        [apptainer, "--quiet", "build", "--force", str(dest), str(rootfs)],
        capture_output=True,
        text=True,
        check=False,
    )
    if built.returncode != 0:
        raise RuntimeError(f"apptainer build {dest} failed ({built.returncode}): {built.stderr.strip()}")
    dest.chmod(0o644)
    return dest


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


HELLO = """echo "Hello from a container ($(cat /etc/image-name))"
echo "results of $(hostname)" > result.txt
"""
"""The example image's entrypoint: a greeting on stdout, a result file in the job's directory."""


COWSAY = 'echo "the cow says: ${*:-moo}"\n'
"""The SIF example's SCIF app ``cowsay`` (the original ran lolcow's)."""


def hello_image(dest: Path, *, apptainer: str = "") -> Path:
    """The example's image at ``dest``, readable by every job owner: an oci-archive, or with
    ``apptainer`` a SIF (with the SCIF app ``cowsay``)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.parent.chmod(0o755)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        root = busybox_rootfs(Path(tmp) / "rootfs", HELLO)
        (root / "etc" / "image-name").write_text("wlmvk busybox\n")
        if apptainer:
            staged = sif(root, Path(tmp) / "image.sif", apptainer=apptainer, apps={"cowsay": COWSAY})
        else:
            staged = oci_archive(root, Path(tmp) / "image.tar")
        staged.replace(dest)  # whole, so a job never pulls a half-written image
    return dest


if __name__ == "__main__":
    print(hello_image(Path(sys.argv[1]), apptainer=sys.argv[2] if len(sys.argv) > 2 else ""))
