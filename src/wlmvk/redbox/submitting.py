"""A submission's sbatch options and environment, from its JobSpec, checked before anything is made.

The texts that Slurm stores are checked (``scripts.check_text``), then the site's allow-lists
(docs/tenancy.md), then the working directory is made and the outputs resolved inside the
confinement: a refused job leaves nothing behind. ``jobs.Jobs.submit`` calls it for every job.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import JobSpec
from wlmvk.redbox import scripts
from wlmvk.redbox.files import Confinement
from wlmvk.slurm import tenancy

_log = structlog.get_logger(__name__)


def options(
    spec: JobSpec, *, allowed: tenancy.Allowed, confinement: Confinement, base_env: Mapping[str, str]
) -> tuple[list[str], dict[str, str] | None]:
    """The sbatch options and the environment of ``spec``; InvalidInput when it is refused."""
    # Checked before the working directory is made: a refused job leaves nothing behind.
    texts = {"partition": spec.partition, "job name": spec.name, "working dir": spec.working_dir}
    for what, value in {**texts, "output": spec.std_out, "error": spec.std_err}.items():
        scripts.check_text(what, value)
    # The options red-box adds besides the partition (name, directory, outputs, key) choose
    # no identity: the script, the partition and the environment are what is judged.
    partition = [f"--partition={spec.partition}"] if spec.partition else []
    refused = tenancy.outside(allowed, spec.script, partition, spec.env)
    if refused:
        _log.warning("job refused by the site's allow-lists", why=refused, key=spec.idempotency_key or None)
        raise InvalidInput(refused)
    working_dir = confinement.directory(spec.working_dir or ".", create=True)
    outputs = []
    for path in (spec.std_out, spec.std_err):
        if path:
            # Slurm expands %j etc. in the name; the directory part must be ours.
            outputs.append(str(confinement.resolve(path, base=working_dir)))
        else:
            outputs.append("")
    options = scripts.sbatch_options(
        script=spec.script,
        partition=spec.partition,
        name=spec.name,
        working_dir=str(working_dir),
        std_out=outputs[0],
        std_err=outputs[1],
        idempotency_key=spec.idempotency_key,
    )
    return options, scripts.environment(base_env, spec.env)
