"""core.sbatch: the script's directives and what sbatch receives, with sbatch's rules.

The precedence cases were checked with sbatch 22.05 (scontrol show job of held jobs):
an indented ``#SBATCH`` is ignored, the last occurrence in the script wins, and the
command line wins over the script.
"""

from __future__ import annotations

import pytest

from wlmvk.core.errors import InvalidInput
from wlmvk.slurm import sbatch


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("#!/bin/sh\n#SBATCH --mem=10\n", {"mem"}),
        ("#!/bin/sh\n#SBATCH -c 2 -t 1:00\n", {"cpus-per-task", "time"}),
        ("#!/bin/sh\n\n# a comment\n#SBATCH --gpus=1\n", {"gres"}),
        ("#!/bin/sh\n#SBATCH --job-name=x # note -c 2\n", {"job-name"}),
        ("#!/bin/sh\n#SBATCH --exclusive\n", {"exclusive"}),
        ("#!/bin/sh\necho\n#SBATCH --mem=1\n", set()),
        ("#SBATCH -N 2\n", {"nodes"}),
        ("#!/bin/sh\n#SBATCH --output='a b.out'\n", {"output"}),
        ("#!/bin/sh\n#SBATCH --mem-per-cpu=1G\n", {"mem"}),
        ("#!/bin/sh\n  #SBATCH --mem=4G\n\t#SBATCH -c 2\n", set()),
        ("#!/bin/sh\n  # an indented comment\n#SBATCH -c 2\n", {"cpus-per-task"}),
    ],
)
def test_settings(script: str, expected: set[str]) -> None:
    assert sbatch.settings(script) == expected


def test_the_last_occurrence_wins() -> None:
    script = "#!/bin/sh\n#SBATCH --job-name=first\n#SBATCH -J second\n"
    assert sbatch.effective(script)["job-name"] == sbatch.Directive("job-name", "second", 3)


def test_defaults_go_after_the_shebang_only_where_the_script_is_silent() -> None:
    script = "#!/bin/bash\n#SBATCH --mem-per-cpu=1G\necho\n"
    assert sbatch.with_defaults(script, [("mem", "5M"), ("cpus-per-task", "2")]) == (
        "#!/bin/bash\n#SBATCH --cpus-per-task=2\n#SBATCH --mem-per-cpu=1G\necho\n"
    )


def test_defaults_add_a_shebang_and_newline() -> None:
    assert (
        sbatch.with_defaults("echo", [("cpus-per-task", "1")])
        == "#!/bin/sh\n#SBATCH --cpus-per-task=1\necho\n"
    )
    assert sbatch.with_defaults("echo\n", []) == "#!/bin/sh\necho\n"
    assert sbatch.with_defaults("#!/bin/sh\necho\n", []) == "#!/bin/sh\necho\n"


OURS = [("partition", "debug"), ("job-name", "cow"), ("chdir", "/w/j"), ("output", "/w/j/out"), ("error", "")]


def test_command_line_of_a_silent_script() -> None:
    assert sbatch.command_line("#!/bin/sh\necho\n", OURS, key="uid-1") == [
        "--partition=debug",
        "--job-name=cow",
        "--chdir=/w/j",
        "--output=/w/j/out",
        "--comment=wlmvk:uid-1",
    ]


def test_the_scripts_name_output_and_comment_are_kept_and_the_key_still_found() -> None:
    script = (
        "#!/bin/sh\n#SBATCH --job-name=mine -o my.out\n#SBATCH --comment='my note'\n"
        "#SBATCH --partition=other --chdir=/elsewhere\necho\n"
    )
    argv = sbatch.command_line(script, OURS, key="uid-1")
    assert argv == ["--partition=debug", "--chdir=/w/j", "--comment=wlmvk:uid-1 my note"]
    assert sbatch.comment_key("wlmvk:uid-1 my note") == "uid-1"


def test_no_key_no_comment() -> None:
    assert sbatch.command_line("#!/bin/sh\n#SBATCH --comment=x\n", [], key="") == []


def test_only_known_options_reach_the_command_line() -> None:
    with pytest.raises(ValueError, match="--time"):
        sbatch.command_line("#!/bin/sh\n", [("time", "5")], key="")


@pytest.mark.parametrize(
    ("comment", "key"),
    [
        ("wlmvk:abc", "abc"),
        ("wlmvk:abc their words", "abc"),
        (" wlmvk:abc ", "abc"),
        ("wlmvk:", ""),
        ("wlmvk: abc", ""),
        ("(null)", ""),
        ("somebody else's note", ""),
    ],
)
def test_comment_key(comment: str, key: str) -> None:
    assert sbatch.comment_key(comment) == key


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('#SBATCH --job-name="unterminated', "line 2: cannot read"),
        ("#SBATCH --mem", "line 2: option --mem needs a value"),
        ("#SBATCH -p", "line 2: option -p needs a value"),
        ("#SBATCH mem=4", "line 2: 'mem=4' is not an sbatch option"),
    ],
)
def test_unreadable_directives(line: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        sbatch.directives(f"#!/bin/sh\n{line}\necho\n")
