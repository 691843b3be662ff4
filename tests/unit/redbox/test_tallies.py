"""red-box's tallies (``--stats-file``): GC collections by generation, written whole on request."""

from __future__ import annotations

import gc
import json
from collections import Counter
from pathlib import Path

from wlmvk.redbox.tallies import GcWatch, StatsFile


def test_a_watched_collection_is_counted_in_its_generation() -> None:
    watch = GcWatch()
    gc.disable()  # only the collections asked for here
    try:
        watch.start()
        gc.collect(2)
        gc.collect(0)
        watch.stop()
        gc.collect(1)  # not watched any more
    finally:
        gc.enable()
    assert watch.collections == [1, 0, 1]
    assert watch.seconds[0] > 0
    assert watch.seconds[2] > 0
    assert watch.seconds[1] == 0
    assert watch not in gc.callbacks


def test_each_request_writes_the_tallies_whole_with_its_number(tmp_path: Path) -> None:
    scans: Counter[str] = Counter(full=1)
    stats = StatsFile(tmp_path / "tallies.json", scans, [3, 0.25], GcWatch())
    stats.write()
    scans["since"] += 2
    stats.write()
    figures = json.loads((tmp_path / "tallies.json").read_text())
    assert figures["written"] == 2
    assert figures["index_scans"] == {"full": 1, "since": 2}
    assert (figures["fsyncs"], figures["fsync_seconds"]) == (3, 0.25)
    assert figures["gc_collections"] == [0, 0, 0]
    assert [p.name for p in tmp_path.iterdir()] == ["tallies.json"]
