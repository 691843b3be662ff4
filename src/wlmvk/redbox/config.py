"""red-box settings and the per-partition YAML overrides (``-config``).

The YAML format is the original red-box's: a map from partition name to
``nodes``, ``cpu_per_node``, ``mem_per_node`` (MB), ``wall_time`` (a Go
duration such as ``10h`` or ``1h30m``), ``additional_features`` (a list of
``{name, version, quantity}``) and the ``auto_*`` booleans that force
Slurm's value. Anything else is an error that names the key and its line,
so a typo (the original README's ``additional_feautres``) is caught at start
instead of silently ignored.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

import yaml

from wlmvk.core.errors import InvalidInput
from wlmvk.core.jobs import Feature
from wlmvk.redbox.slurm.cli.nodeinfo import PartitionRecord
from wlmvk.slurm.tenancy import Allowed

DEFAULT_SOCKET = "/var/run/syslurm/red-box.sock"

SLURM_APIS = ("auto", "cli", "rest")


@dataclass(frozen=True)
class Settings:
    """Everything red-box is started with; each field is a command-line flag."""

    socket: str = DEFAULT_SOCKET
    config: str = ""
    work_dir: Path = field(default_factory=Path.cwd)
    allow_roots: tuple[Path, ...] = ()
    state_dir: Path = field(default_factory=lambda: Path.home() / ".local" / "state" / "wlmvk-red-box")
    original_api_only: bool = False
    tcp: str = ""
    tls_cert: str = ""
    tls_key: str = ""
    tls_client_ca: str = ""
    slurm_timeout: float = 30.0
    max_script_bytes: int = 1024 * 1024
    poll_interval: float = 8.0
    log_level: str = "info"
    # apptainer, singularity, podman, none, or auto (core.runtimes.AUTO_ORDER).
    container_runtime: str = "auto"
    # Directories searched for the runtime ahead of PATH (red-box's and its jobs'), "" none.
    runtime_path: str = ""
    # A directory of SIF files that plain pods' images name (core.runtimes.sif_name), "" none.
    image_dir: str = ""
    # How jobs are submitted and cancelled: cli (sbatch, scancel), rest (red-box's own
    # slurmrestd, required), auto (slurmrestd when installed with a version red-box speaks).
    slurm_api: str = "auto"
    # The accounts, QoS and partitions its jobs may name (empty: any): docs/tenancy.md.
    allowed: Allowed = field(default_factory=Allowed)
    # Debugging: on SIGUSR1, red-box's tallies (``tallies``) as JSON to this file; "" none.
    stats_file: str = ""

    @property
    def roots(self) -> tuple[Path, ...]:
        """Directories the file rpcs may touch: the working root first, then --allow-root."""
        return (self.work_dir, *self.allow_roots)


@dataclass(frozen=True)
class PartitionOverride:
    """Configured values of one partition; 0 / None / False means 'use Slurm's'."""

    nodes: int = 0
    cpu_per_node: int = 0
    mem_per_node: int = 0
    wall_time: int = 0
    additional_features: tuple[Feature, ...] = ()
    auto_nodes: bool = False
    auto_cpu_per_node: bool = False
    auto_mem_per_node: bool = False
    auto_wall_time: bool = False
    line: int = field(default=0, compare=False)

    def apply(self, record: PartitionRecord) -> PartitionRecord:
        """The original's merge rule: a configured non-zero value wins unless auto_* is set."""
        memory = self.mem_per_node if self.mem_per_node and not self.auto_mem_per_node else None
        return replace(
            record,
            nodes=self.nodes if self.nodes and not self.auto_nodes else record.nodes,
            cpu_per_node=(
                self.cpu_per_node if self.cpu_per_node and not self.auto_cpu_per_node else record.cpu_per_node
            ),
            mem_per_node=record.mem_per_node if memory is None else memory,
            mem_limit=record.mem_limit if memory is None else memory,
            wall_time=self.wall_time if self.wall_time and not self.auto_wall_time else record.wall_time,
            features=record.features + self.additional_features,
        )


_INT_KEYS = ("nodes", "cpu_per_node", "mem_per_node")
_BOOL_KEYS = ("auto_nodes", "auto_cpu_per_node", "auto_mem_per_node", "auto_wall_time")
_KEYS = (*_INT_KEYS, *_BOOL_KEYS, "wall_time", "additional_features")
_FEATURE_KEYS = ("name", "version", "quantity")
_GO_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|ms|m|s|us|µs|ns)")


def go_duration(text: str) -> int:
    """``10h``, ``90m``, ``1h30m``, ``45s`` -> whole seconds (Go's time.ParseDuration syntax)."""
    text = text.strip()
    if not text or _GO_DURATION.sub("", text) != "":
        raise ValueError(f"{text!r} is not a duration such as 10h, 90m or 1h30m")
    return int(sum(float(n) * _GO_UNITS[u] for n, u in _GO_DURATION.findall(text)))


def _where(node: yaml.Node, path: str) -> str:
    return f"{path}: line {node.start_mark.line + 1}"


def _scalar(node: yaml.Node, path: str) -> str:
    if not isinstance(node, yaml.ScalarNode):
        raise InvalidInput(f"{_where(node, path)}: expected a single value")
    return str(node.value)


def _integer(node: yaml.Node, path: str) -> int:
    text = _scalar(node, path)
    if not re.fullmatch(r"\d+", text):
        raise InvalidInput(f"{_where(node, path)}: {text!r} is not a non-negative integer")
    return int(text)


def _boolean(node: yaml.Node, path: str) -> bool:
    text = _scalar(node, path).lower()
    if text not in {"true", "false", "yes", "no"}:
        raise InvalidInput(f"{_where(node, path)}: {text!r} is not true or false")
    return text in {"true", "yes"}


def _feature(node: yaml.Node, path: str) -> Feature:
    if not isinstance(node, yaml.MappingNode):
        raise InvalidInput(f"{_where(node, path)}: expected name, version, quantity")
    values: dict[str, yaml.Node] = {}
    for key_node, value_node in node.value:
        key = _scalar(key_node, path)
        if key not in _FEATURE_KEYS:
            raise InvalidInput(f"{_where(key_node, f'{path}.{key}')}: unknown key {key!r}")
        values[key] = value_node
    if "name" not in values:
        raise InvalidInput(f"{_where(node, path)}: a feature needs a name")
    return Feature(
        name=_scalar(values["name"], f"{path}.name"),
        version=_scalar(values["version"], f"{path}.version") if "version" in values else "",
        quantity=_integer(values["quantity"], f"{path}.quantity") if "quantity" in values else 0,
    )


def _override(node: yaml.Node, partition: str) -> PartitionOverride:
    if isinstance(node, yaml.ScalarNode) and node.value in {"", "~", "null"}:
        return PartitionOverride()
    if not isinstance(node, yaml.MappingNode):
        raise InvalidInput(f"{_where(node, partition)}: expected a map of settings")
    values: dict[str, object] = {}
    for key_node, value_node in node.value:
        key = _scalar(key_node, partition)
        path = f"{partition}.{key}"
        if key not in _KEYS:
            raise InvalidInput(f"{_where(key_node, path)}: unknown key {key!r} (known: {', '.join(_KEYS)})")
        if key in _INT_KEYS:
            values[key] = _integer(value_node, path)
        elif key in _BOOL_KEYS:
            values[key] = _boolean(value_node, path)
        elif key == "wall_time":
            try:
                values[key] = go_duration(_scalar(value_node, path))
            except ValueError as exc:
                raise InvalidInput(f"{_where(value_node, path)}: {exc}") from exc
        else:
            if not isinstance(value_node, yaml.SequenceNode):
                raise InvalidInput(f"{_where(value_node, path)}: expected a list of features")
            values[key] = tuple(_feature(item, f"{path}[{i}]") for i, item in enumerate(value_node.value))
    return PartitionOverride(**values)  # type: ignore[arg-type]


def parse_overrides(text: str, source: str = "config") -> dict[str, PartitionOverride]:
    """The YAML text -> {partition: override}; errors name the file, key and line."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        raise InvalidInput(f"{source}: not valid YAML: {exc}") from exc
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise InvalidInput(f"{source}: line {root.start_mark.line + 1}: expected a map of partitions")
    result: dict[str, PartitionOverride] = {}
    try:
        for key_node, value_node in root.value:
            name = _scalar(key_node, "partition")
            result[name] = replace(_override(value_node, name), line=key_node.start_mark.line + 1)
    except InvalidInput as exc:
        raise InvalidInput(f"{source}: {exc.message}") from exc
    return result


def load_overrides(path: str) -> dict[str, PartitionOverride]:
    if not path:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInput(f"{path}: {exc.strerror}") from exc
    return parse_overrides(text, path)


def check_partitions(overrides: Mapping[str, PartitionOverride], known: list[str], source: str) -> None:
    """An override of a partition Slurm does not have is a startup error."""
    for name, override in overrides.items():
        if name not in known:
            raise InvalidInput(
                f"{source}: {name}: line {override.line}: unknown partition {name!r}"
                f" (Slurm has: {', '.join(known) or 'none'})"
            )
