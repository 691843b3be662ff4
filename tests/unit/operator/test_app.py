"""``wlmvk operator`` flags -> settings."""

from __future__ import annotations

import pytest

from wlmvk.operator import app, flags
from wlmvk.operator.settings import OperatorSettings


def parse(*argv: str) -> OperatorSettings:
    return flags.settings_from(flags.parser().parse_args(list(argv)))


def test_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "WATCH_NAMESPACE",
        "WLMVK_WORK_ROOT",
        "WLMVK_STAGE_IMAGE",
        "WLMVK_STAGE_COMMAND",
        "POD_NAMESPACE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POD_NAME", "wlmvk-operator-abc")
    settings = parse()
    assert settings.work_root == ""
    assert settings.namespace == ""
    assert settings.staging.image == "wlmvk:latest"
    assert settings.staging.command == ()
    assert settings.staging.socket_host_path == "/var/run/syslurm/red-box.sock"
    assert (settings.staging.run_as_user, settings.staging.run_as_group) == (1000, 1000)
    assert settings.leader_election is True
    assert settings.lease_namespace == "default"
    assert settings.identity == "wlmvk-operator-abc"


def test_in_a_pod_the_staging_image_is_left_to_be_read_from_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("WLMVK_STAGE_IMAGE", raising=False)
    monkeypatch.setenv("POD_NAME", "wlmvk-operator-abc")
    monkeypatch.setenv("POD_NAMESPACE", "wlmvk")
    settings = parse()
    assert (settings.staging.image, settings.own_pod) == ("", ("wlmvk", "wlmvk-operator-abc"))
    assert parse("--stage-image=registry/wlmvk:1").staging.image == "registry/wlmvk:1"


def test_flags() -> None:
    settings = parse(
        "--work-root=/scratch/jobs",
        "--namespace=team",
        "--stage-image=registry/wlmvk:1",
        "--stage-command=python3 -m wlmvk.cli",
        "--stage-env=A=1",
        "--stage-env=B=x=y",
        "--run-as-user=2000",
        "--run-as-group=3000",
        "--stage-timeout=120",
        "--no-leader-elect",
        "--lease-duration=4",
        "--renew-interval=0.5",
        "--retry-interval=0.25",
    )
    assert (settings.lease_duration, settings.renew_interval, settings.retry_interval) == (4, 0.5, 0.25)
    assert settings.work_root == "/scratch/jobs"
    assert settings.namespace == "team"
    assert settings.staging.command == ("python3", "-m", "wlmvk.cli")
    assert settings.staging.env == (("A", "1"), ("B", "x=y"))
    assert (settings.staging.run_as_user, settings.staging.run_as_group) == (2000, 3000)
    assert settings.staging.timeout == 120
    assert settings.leader_election is False


def test_bad_stage_env() -> None:
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        parse("--stage-env=novalue")


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert app.main(["--help"]) == 0
    assert "--work-root" in capsys.readouterr().out


def test_unknown_flag_is_a_usage_error() -> None:
    assert app.main(["--no-such-flag"]) == 2
