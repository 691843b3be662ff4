from __future__ import annotations

import pytest

from wlmvk.kubelet import directives


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("#!/bin/sh\n#SBATCH --mem=10\n", {"--mem"}),
        ("#!/bin/sh\n#SBATCH -c 2 -t 1:00\n", {"--cpus-per-task", "--time"}),
        ("#!/bin/sh\n\n# a comment\n#SBATCH --gpus=1\n", {"--gres"}),
        ("#!/bin/sh\n#SBATCH --job-name=x # note -c 2\n", {"--job-name"}),
        ("#!/bin/sh\n#SBATCH --exclusive\n", {"--exclusive"}),
        ("#!/bin/sh\necho\n#SBATCH --mem=1\n", set()),
        ("#SBATCH -N 2\n", {"--nodes"}),
        ("#!/bin/sh\n#SBATCH --output='a b.out'\n", {"--output"}),
        ("#!/bin/sh\n#SBATCH --mem-per-cpu=1G\n", {"--mem"}),
    ],
)
def test_set_options(script: str, expected: set[str]) -> None:
    assert directives.set_options(script) == expected


def test_insert_after_shebang() -> None:
    assert directives.insert("#!/bin/bash\necho\n", ["#SBATCH -c 1"]) == "#!/bin/bash\n#SBATCH -c 1\necho\n"


def test_insert_adds_shebang_and_newline() -> None:
    assert directives.insert("echo", ["#SBATCH -c 1"]) == "#!/bin/sh\n#SBATCH -c 1\necho\n"
