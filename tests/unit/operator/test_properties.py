"""Properties of the pure parts, over generated inputs."""

from __future__ import annotations

import posixpath

from hypothesis import given
from hypothesis import strategies as st

from wlmvk.core.errors import InvalidInput
from wlmvk.operator.directives import requirements
from wlmvk.operator.resources import confined
from wlmvk.slurm.durations import seconds as parse_duration

segment = st.sampled_from(["a", "b", "..", ".", "", "c d", "x..y"])


@given(st.lists(segment, max_size=8), st.booleans())
def test_a_confined_path_never_leaves_the_working_directory(parts: list[str], absolute: bool) -> None:
    path = ("/" if absolute else "") + "/".join(parts)
    try:
        normal = confined(path, field_name="f")
    except InvalidInput:
        return
    joined = posixpath.normpath(posixpath.join("/work/job", normal))
    assert joined == "/work/job" or joined.startswith("/work/job/")


@given(st.integers(0, 99), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
def test_every_time_format_agrees(days: int, hours: int, minutes: int, seconds: int) -> None:
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    assert parse_duration(f"{days}-{hours}:{minutes}:{seconds}") == total
    assert parse_duration(f"{days * 24 + hours}:{minutes}:{seconds}") == total
    assert parse_duration(f"{(days * 24 + hours) * 60 + minutes}:{seconds}") == total


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200))
def test_any_directive_text_is_read_or_refused_never_crashes(text: str) -> None:
    script = "#!/bin/sh\n" + "\n".join(f"#SBATCH {line}" for line in text.splitlines()) + "\necho\n"
    try:
        requirements(script)
    except InvalidInput as exc:
        message = exc.message
    else:
        return
    assert message.startswith("line ")


@given(st.integers(1, 10_000), st.sampled_from(["", "K", "M", "G", "T"]))
def test_memory_is_never_less_than_asked(amount: int, unit: str) -> None:
    mb = requirements(f"#SBATCH --mem={amount}{unit}\n").mem_per_node
    factor = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[unit]
    assert mb >= amount * factor
    assert mb - amount * factor < 1
