"""The #SBATCH reader: what sbatch accepts is read, what it rejects is a clear error."""

from __future__ import annotations

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.operator.directives import Requirements, requirements
from wlmvk.slurm.durations import seconds as parse_duration
from wlmvk.slurm.sbatch import Directive, directives


def script(*lines: str) -> str:
    return "\n".join(["#!/bin/sh", *lines, "echo done"]) + "\n"


def test_no_directives_asks_nothing() -> None:
    assert requirements("#!/bin/sh\necho Hello\n") == Requirements()


def test_readme_example() -> None:
    batch = "#!/bin/sh\n#SBATCH --nodes=1\necho Hello\nmkdir bar\n"
    assert requirements(batch) == Requirements(nodes=1)


@pytest.mark.parametrize(
    "line",
    ["#SBATCH --nodes=2", "#SBATCH --nodes 2", "#SBATCH -N 2", "#SBATCH -N2", "#SBATCH -N=2"],
)
def test_every_spelling_of_a_value(line: str) -> None:
    assert requirements(script(line)).nodes == 2


def test_node_range_takes_the_minimum() -> None:
    assert requirements(script("#SBATCH --nodes=2-4")).nodes == 2


@pytest.mark.parametrize("flag", ["--exclusive", "--requeue", "--no-requeue", "--hold", "-H", "--wait"])
def test_valueless_flags_do_not_swallow_the_next_option(flag: str) -> None:
    found = directives(script(f"#SBATCH {flag} -N 3"))
    assert found[0].value is None
    assert requirements(script(f"#SBATCH {flag} -N 3")).nodes == 3


def test_valueless_flag_last_on_its_line() -> None:
    # the original operator crashed here (index out of range)
    assert directives(script("#SBATCH --exclusive")) == [Directive("exclusive", None, 2)]


def test_optional_value_with_equals() -> None:
    assert directives(script("#SBATCH --exclusive=user")) == [Directive("exclusive", "user", 2)]


def test_comment_after_a_directive() -> None:
    assert requirements(script("#SBATCH -N 2 # two nodes")).nodes == 2


def test_quoted_value_keeps_its_spaces() -> None:
    found = directives(script('#SBATCH --job-name="my job" --time=5'))
    assert found[0] == Directive("job-name", "my job", 2)
    assert found[1].value == "5"


def test_reading_stops_at_the_first_command() -> None:
    batch = "#!/bin/sh\n#SBATCH -N 1\necho hi\n#SBATCH -N 9\n"
    assert requirements(batch).nodes == 1


def test_blank_lines_and_comments_do_not_stop_reading() -> None:
    batch = "#!/bin/bash\n\n# a comment\n#SBATCH --time=10\n   \n#SBATCH -c 2\nsrun hostname\n"
    assert requirements(batch) == Requirements(wall_time=600, cpu_per_node=2)


def test_lookalike_prefix_is_a_comment() -> None:
    assert requirements(script("#SBATCHX -N 4", "##SBATCH -N 5")).nodes == 0


def test_last_occurrence_wins() -> None:
    assert requirements(script("#SBATCH -N 1", "#SBATCH --nodes=3")).nodes == 3


@pytest.mark.parametrize(
    ("value", "mb"),
    [("4000", 4000), ("4G", 4096), ("4g", 4096), ("512M", 512), ("1T", 1048576), ("2048K", 2), ("100K", 1)],
)
def test_memory_with_unit_suffixes(value: str, mb: int) -> None:
    assert requirements(script(f"#SBATCH --mem={value}")).mem_per_node == mb


def test_memory_per_cpu_times_cpus() -> None:
    got = requirements(script("#SBATCH --mem-per-cpu=1G", "#SBATCH -c 2", "#SBATCH --ntasks-per-node=2"))
    assert (got.cpu_per_node, got.mem_per_node) == (4, 4096)


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("5", 300),
        ("5:30", 330),
        ("1:00:00", 3600),
        ("2-0", 172800),
        ("1-2", 93600),
        ("1-2:30", 95400),
        ("1-2:30:15", 95415),
        ("0:01", 1),
    ],
)
def test_time_formats(value: str, seconds: int) -> None:
    assert requirements(script(f"#SBATCH --time={value}")).wall_time == seconds
    assert requirements(script(f"#SBATCH -t {value}")).wall_time == seconds


@pytest.mark.parametrize("value", ["UNLIMITED", "infinite"])
def test_unlimited_time_asks_nothing(value: str) -> None:
    assert requirements(script(f"#SBATCH --time={value}")).wall_time == 0


@pytest.mark.parametrize("value", ["", "abc", "1:2:3:4", "x-1", "1-a"])
def test_parse_duration_rejects(value: str) -> None:
    assert parse_duration(value) is None


def test_cpus_multiply_tasks_per_node() -> None:
    # the original's example: -c 4 and --ntasks-per-node 6 -> 24 CPUs per node
    got = requirements(script("#SBATCH -c 4", "#SBATCH --ntasks-per-node 6"))
    assert got.cpu_per_node == 24


def test_tasks_spread_over_nodes() -> None:
    got = requirements(script("#SBATCH -n 5 -N 2 -c 2"))
    assert got.cpu_per_node == 6


def test_mincpus() -> None:
    assert requirements(script("#SBATCH --mincpus=3")).cpu_per_node == 3


@pytest.mark.parametrize(
    ("line", "gpus"),
    [
        ("#SBATCH --gres=gpu:2", 2),
        ("#SBATCH --gres=gpu", 1),
        ("#SBATCH --gres=gpu:tesla:3", 3),
        ("#SBATCH --gres=gpu:tesla", 1),
        ("#SBATCH --gres=mps:100,gpu:1", 1),
        ("#SBATCH --gpus-per-node=2", 2),
        ("#SBATCH -G 4 -N 2", 2),
        ("#SBATCH --gpus=a100:1", 1),
    ],
)
def test_gpus(line: str, gpus: int) -> None:
    assert requirements(script(line)).gpu_per_node == gpus


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("avx2", (("avx2",),)),
        ("avx2&ib", (("avx2", "ib"),)),
        ("avx2,ib", (("avx2", "ib"),)),
        ("avx2|avx512", (("avx2",), ("avx512",))),
        ("[rack1|rack2]", (("rack1",), ("rack2",))),
        ("gpu*2", (("gpu",),)),
    ],
)
def test_constraints(value: str, expected: tuple[tuple[str, ...], ...]) -> None:
    assert requirements(script(f"#SBATCH --constraint={value}")).constraints == expected
    assert requirements(script(f"#SBATCH -C {value}")).constraints == expected


def test_partition_list() -> None:
    assert requirements(script("#SBATCH -p debug,long")).partitions == ("debug", "long")


def test_unused_options_are_accepted() -> None:
    batch = script(
        "#SBATCH --job-name=test --output=%x-%j.out --error=err.txt",
        "#SBATCH --mail-type=END,FAIL --mail-user=a@b.c -A acct -q normal",
        "#SBATCH --export=ALL --signal=B:USR1@60 --array=1-3 --some-future-option=1",
    )
    assert requirements(batch) == Requirements()


def test_bundled_short_flags() -> None:
    names = [d.name for d in directives(script("#SBATCH -HQ -N 2"))]
    assert names == ["hold", "quiet", "nodes"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("#SBATCH --nodes", "--nodes needs a value"),
        ("#SBATCH -N", "-N needs a value"),
        ("#SBATCH --nodes=two", "--nodes wants N"),
        ("#SBATCH --mem=4X", "--mem wants a size"),
        ("#SBATCH --mem=-4", "--mem wants a size"),
        ("#SBATCH --time=soon", "--time wants minutes"),
        ("#SBATCH -c many", "--cpus-per-task wants a count"),
        ('#SBATCH --job-name="unterminated', "cannot read"),
        ("#SBATCH nodes=2", "not an sbatch option"),
        ("#SBATCH --gres=gpu:x:y", "wants a GPU count"),
        ("#SBATCH --constraint=a&&b", "feature name"),
    ],
)
def test_unreadable_directive_is_a_clear_error(line: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        requirements(script(line))
    assert "line 2" in caught.value.message


def test_an_indented_directive_is_a_comment_as_for_sbatch() -> None:
    assert requirements(script("  #SBATCH -N 4", "#SBATCH -N 2")).nodes == 2


def test_an_indented_command_stops_reading() -> None:
    assert requirements("#!/bin/sh\n  echo hi\n#SBATCH -N 3\n").nodes == 0
