"""``wlmvk stage in|out`` against a stand-in backend: outcomes and exit codes."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog

from wlmvk.core.backend import Backend
from wlmvk.core.errors import InvalidInput, Unavailable
from wlmvk.core.tarstreams import unpack
from wlmvk.staging import app
from wlmvk.staging.packing import pack


def make_dir(path: str) -> None:
    Path(path).mkdir(parents=True, exist_ok=True)


def exists(path: str) -> bool:
    return Path(path).exists()


class Remote:
    """The WLM side's filesystem: what red-box's stage_in/stage_out would do. ``down``: every
    call is refused; ``drops``: that many transfers break midway (red-box killed), then all work."""

    def __init__(self, *, down: bool = False, drops: int = 0) -> None:
        self.down = down
        self.drops = drops
        self.closed = False

    async def stage_in(self, directory: str, tar_stream: AsyncIterable[bytes]) -> tuple[int, int]:
        if self.down:
            raise Unavailable("connection refused")
        make_dir(directory)
        if self.drops:
            self.drops -= 1
            async for _ in tar_stream:
                break  # a first chunk went up, then the connection was gone
            raise Unavailable("connection lost")
        totals = await unpack(tar_stream, Path(directory))
        return totals.files, totals.bytes

    async def stage_out(self, path: str) -> AsyncIterator[bytes]:
        if not exists(path):
            raise InvalidInput(f"{path}: no such file or directory")
        dropping = self.drops > 0 or self.down
        self.drops = max(0, self.drops - 1)
        sent = 0
        async for chunk in pack(Path(path)):
            if dropping and sent >= 1024:
                raise Unavailable("connection lost")
            sent += len(chunk)
            yield chunk

    async def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """main() configures structlog on the captured stderr; later tests must not log into it."""
    yield
    structlog.reset_defaults()


def run(argv: list[str], remote: Remote) -> int:
    def factory(socket: str, timeout: float) -> Backend:
        return remote  # type: ignore[return-value]

    return app.main(argv, backend=factory)


def test_stage_in_uploads_the_directory_under_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "foo.txt").write_text("foo\n")
    workdir = tmp_path / "job"
    remote = Remote()
    code = run(
        ["in", "--socket", "/x.sock", "--from", str(tmp_path / "inputs"), "--to", str(workdir)], remote
    )
    assert code == 0
    assert (workdir / "inputs" / "foo.txt").read_text() == "foo\n"
    assert "uploaded 1 files (4 bytes)" in capsys.readouterr().out
    assert remote.closed


def test_stage_out_downloads_under_the_base_name(tmp_path: Path) -> None:
    (tmp_path / "job" / "bar").mkdir(parents=True)
    (tmp_path / "job" / "bar" / "output.txt").write_text("foo\nslurm\n")
    outputs = tmp_path / "outputs"
    code = run(["out", "--from", str(tmp_path / "job" / "bar"), "--to", str(outputs)], Remote())
    assert code == 0
    assert (outputs / "bar" / "output.txt").read_text() == "foo\nslurm\n"


def test_missing_remote_path_is_a_clear_failure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["out", "--from", str(tmp_path / "nope"), "--to", str(tmp_path / "o")], Remote())
    assert code == 1
    assert "nope: no such file or directory" in capsys.readouterr().err


def test_missing_local_volume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["in", "--from", str(tmp_path / "absent"), "--to", str(tmp_path / "w")], Remote())
    assert code == 1
    assert "is the volume mounted" in capsys.readouterr().err


def test_unreachable_red_box(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Tried again until the timeout (1 s, then 2 s would pass it), then exit 3."""
    (tmp_path / "in").mkdir()
    argv = ["in", "--socket", "/s.sock", "--from", str(tmp_path / "in"), "--to", "/w", "--timeout", "2.5"]
    code = run(argv, Remote(down=True))
    assert code == 3
    assert capsys.readouterr().err.splitlines() == [
        "wlmvk stage: connection refused; starting the transfer again in 1 s",
        "wlmvk stage: red-box at /s.sock is unreachable: connection refused",
    ]


def test_upload_broken_midway_starts_again_and_ends_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "inputs").mkdir()
    (tmp_path / "inputs" / "big.bin").write_bytes(bytes(range(256)) * 4096)
    remote = Remote(drops=1)
    code = run(["in", "--from", str(tmp_path / "inputs"), "--to", str(tmp_path / "job")], remote)
    assert code == 0
    assert (tmp_path / "job" / "inputs" / "big.bin").read_bytes() == bytes(range(256)) * 4096
    out, err = capsys.readouterr()
    assert err.splitlines() == ["wlmvk stage: connection lost; starting the transfer again in 1 s"]
    assert out.startswith("uploaded 1 files (1048576 bytes)")


def test_download_broken_midway_starts_again_and_ends_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "job" / "bar").mkdir(parents=True)
    (tmp_path / "job" / "bar" / "a.bin").write_bytes(b"a" * 300_000)
    (tmp_path / "job" / "bar" / "b.bin").write_bytes(b"b" * 300_000)
    outputs = tmp_path / "outputs"
    code = run(["out", "--from", str(tmp_path / "job" / "bar"), "--to", str(outputs)], Remote(drops=1))
    assert code == 0
    assert sorted(p.name for p in (outputs / "bar").iterdir()) == ["a.bin", "b.bin"]
    assert (outputs / "bar" / "a.bin").read_bytes() == b"a" * 300_000
    assert (outputs / "bar" / "b.bin").read_bytes() == b"b" * 300_000
    assert capsys.readouterr().err.splitlines() == [
        "wlmvk stage: connection lost; starting the transfer again in 1 s"
    ]


def test_download_that_cannot_finish_says_its_copy_is_incomplete(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "job" / "bar").mkdir(parents=True)
    (tmp_path / "job" / "bar" / "a.bin").write_bytes(b"a" * 300_000)
    outputs = tmp_path / "outputs"
    argv = ["out", "--socket", "/s.sock", "--from", str(tmp_path / "job" / "bar"), "--to", str(outputs)]
    code = run([*argv, "--timeout", "0.5"], Remote(down=True))
    assert code == 3
    assert capsys.readouterr().err.splitlines() == [
        f"wlmvk stage: red-box at /s.sock is unreachable: connection lost; the copy left in {outputs / 'bar'}"
        " is incomplete"
    ]


@pytest.mark.parametrize("argv", [[], ["sideways"], ["in", "--from", "x"], ["out", "--to", "y"]])
def test_usage_errors(argv: list[str]) -> None:
    assert run(argv, Remote()) == 2


def test_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["in", "--help"], Remote()) == 0
    assert "--socket" in capsys.readouterr().out
