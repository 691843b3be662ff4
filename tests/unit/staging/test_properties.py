"""Any tree survives a pack/unpack round trip unchanged."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from wlmvk.core.tarstreams import unpack
from wlmvk.staging.packing import pack

name = st.text(alphabet="abcdefgh-_. é", min_size=1, max_size=12).filter(lambda n: n not in {".", ".."})
paths = st.lists(name, min_size=1, max_size=4).map(lambda parts: "/".join(parts))
trees = st.dictionaries(paths, st.binary(max_size=3000), max_size=8)


def write(root: Path, tree: dict[str, bytes]) -> dict[str, bytes]:
    """Write what can be written (a path cannot be both a file and a directory); return it."""
    written: dict[str, bytes] = {}
    for rel, data in sorted(tree.items()):
        target = root / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                continue
            target.write_bytes(data)
        except (FileExistsError, NotADirectoryError, IsADirectoryError):
            continue
        written[rel] = data
    return written


def read(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@settings(max_examples=40, deadline=None)
@given(trees)
def test_round_trip(tree: dict[str, bytes]) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as base:
        src = Path(base) / "src"
        src.mkdir()
        expected = write(src, tree)
        out = Path(base) / "out"
        out.mkdir()
        totals = asyncio.run(unpack(pack(src), out))
        assert read(out / "src") == read(src)
        assert totals.files == len(read(src))
        assert totals.bytes == sum(len(d) for d in read(src).values())
        assert set(expected) <= set(read(out / "src"))
