"""red-box's allow-lists (docs/tenancy.md) come from its own command line, comma-separated."""

from __future__ import annotations

from pathlib import Path

from wlmvk.redbox import flags
from wlmvk.slurm.tenancy import Allowed


def test_allow_lists_from_the_command_line(tmp_path: Path) -> None:
    argv = ["--work-dir", str(tmp_path), "--allowed-accounts", "physics, chem", "--allowed-qos=normal"]
    settings = flags.settings_from(flags.parser().parse_args(argv))
    assert settings.allowed == Allowed(accounts=("physics", "chem"), qos=("normal",), partitions=())


def test_no_allow_list_allows_anything(tmp_path: Path) -> None:
    settings = flags.settings_from(flags.parser().parse_args(["--work-dir", str(tmp_path)]))
    assert settings.allowed == Allowed()
