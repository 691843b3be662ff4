"""slurmrestd's fields for a job: the options sbatch ends with, or the reason only sbatch can submit it."""

from __future__ import annotations

import json

import pytest

from wlmvk.redbox import scripts
from wlmvk.redbox.slurm.rest import fields as restfields
from wlmvk.redbox.slurm.rest.fields import CliOnly, job_request
from wlmvk.slurm import sbatch

ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/u"}


def _job(
    *lines: str,
    argv: tuple[str, ...] = ("--partition=debug",),
    env: dict[str, str] | None = None,
    version: str = "v0.0.38",
) -> dict:
    script = "\n".join(["#!/bin/sh", *lines, "echo hi"]) + "\n"
    body = job_request(script, list(argv), ENV if env is None else env, version=version)
    job = body["job"]
    assert isinstance(job, dict)
    # The script travels unchanged: beside the job in v0.0.38, in it from v0.0.40 on.
    assert (job.pop("script") if version != "v0.0.38" else body["script"]) == script
    return job


def _only_sbatch(*lines: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(CliOnly) as refused:
        _job(*lines, env=env)
    return refused.value.reason


def test_red_box_command_line_as_sbatch_gets_it() -> None:
    argv = scripts.sbatch_options(
        script="#!/bin/sh\n#SBATCH --comment='theirs'\necho\n",
        partition="cpu",
        name="pod-a",
        working_dir="/w/j",
        std_out="/w/j/out-%j",
        std_err="/w/j/err",
        idempotency_key="uid-1",
    )
    body = job_request("#!/bin/sh\n#SBATCH --comment='theirs'\necho\n", argv, ENV, version="v0.0.38")
    assert body["job"] == {
        "partition": "cpu",
        "name": "pod-a",
        "current_working_directory": "/w/j",
        "standard_output": "/w/j/out-%j",
        "standard_error": "/w/j/err",
        "comment": "wlmvk:uid-1 theirs",
        "environment": {"SLURM_UMASK": "0022", **ENV},
    }


def test_the_command_line_wins_over_the_script() -> None:
    job = _job("#SBATCH -p gpu --job-name=mine", argv=("--partition=debug", "--chdir=/w"))
    assert job["partition"] == "debug"
    assert job["name"] == "mine"
    assert job["current_working_directory"] == "/w"


def test_the_last_occurrence_in_the_script_wins() -> None:
    assert _job("#SBATCH --time=5", "#SBATCH -t 7")["time_limit"] == 7


def test_a_job_without_a_name_gets_sbatchs_name_for_a_script_on_stdin() -> None:
    assert _job()["name"] == "sbatch"


@pytest.mark.parametrize(
    ("directive", "field", "value"),
    [
        ("--time=5", "time_limit", 5),
        ("-t 1:30", "time_limit", 2),  # sbatch rounds seconds up to a minute
        ("-t 2:00:00", "time_limit", 120),
        ("--time=1-0", "time_limit", 1440),
        ("--time=1-2:03:04", "time_limit", 1564),
        ("--time-min=10", "time_minimum", 10),
        ("--mem=100", "memory_per_node", 100),
        ("--mem=4G", "memory_per_node", 4096),
        ("--mem=500K", "memory_per_node", 1),
        ("--mem-per-cpu=50", "memory_per_cpu", 50),
        ("-c 2", "cpus_per_task", 2),
        ("--cpus-per-task=4", "cpus_per_task", 4),
        ("-n 3", "tasks", 3),
        ("--ntasks-per-node=2", "tasks_per_node", 2),
        ("--mincpus=2", "minimum_cpus_per_node", 2),
        ("-N 2", "nodes", "2-2"),
        ("--nodes=1-3", "nodes", "1-3"),
        ("--gres=gpu:1", "gres", "gpu:1"),
        ("-G 2", "gpus", "2"),
        ("--gpus-per-node=1", "gpus_per_node", "1"),
        ("--gpus-per-task=1", "gpus_per_task", "1"),
        ("-C avx2", "constraints", "avx2"),
        ("--constraint='a&b'", "constraints", "a&b"),
        ("-J named", "name", "named"),
        ("--output=o-%j.out", "standard_output", "o-%j.out"),
        ("-e e.err", "standard_error", "e.err"),
        ("-i in.txt", "standard_input", "in.txt"),
        ("--comment='a note'", "comment", "a note"),
        ("--array=0-3%2", "array", "0-3%2"),
        ("-d afterok:12", "dependency", "afterok:12"),
        ("-A proj", "account", "proj"),
        ("-q normal", "qos", "normal"),
        ("--reservation=r1", "reservation", "r1"),
        ("-L lic:2", "licenses", "lic:2"),
        ("--wckey=w", "wckey", "w"),
        ("--mail-type=END,FAIL", "mail_type", "END,FAIL"),
        ("--mail-user=a@b.c", "mail_user", "a@b.c"),
        ("--nice=5", "nice", 5),
        ("--hold", "hold", True),
        ("-H", "hold", True),
        ("--requeue", "requeue", True),
        ("--oversubscribe", "oversubscribe", True),
        ("-s", "oversubscribe", True),
        ("--exclusive", "exclusive", "exclusive"),
        ("--exclusive=user", "exclusive", "user"),
        ("--exclusive=mcs", "exclusive", "mcs"),
    ],
)
def test_each_directive_becomes_its_field(directive: str, field: str, value: object) -> None:
    assert _job(f"#SBATCH {directive}")[field] == value


@pytest.mark.parametrize(
    "directive", ["--parsable", "--quiet", "-Q", "--verbose", "--export=ALL", "--export"]
)
def test_what_only_changes_sbatchs_printing_adds_nothing(directive: str) -> None:
    assert _job(f"#SBATCH {directive}") == _job()


def test_bundled_short_flags() -> None:
    job = _job("#SBATCH -HQ -N 1")
    assert job["hold"] is True
    assert job["nodes"] == "1-1"


@pytest.mark.parametrize(
    ("directive", "reason"),
    [
        ("--time=UNLIMITED", "--time (line 2): 'UNLIMITED' is not a duration this table converts"),
        ("--time=soon", "--time (line 2): 'soon' is not a duration this table converts"),
        ("--mem=0", "--mem (line 2): '0' is not a size this table converts"),
        ("--mem=lots", "--mem (line 2): 'lots' is not a size this table converts"),
        ("-c two", "--cpus-per-task (line 2): 'two' is not a whole number"),
        ("-N 0", "--nodes (line 2): '0' is not N or N-M"),
        ("-N 1-", "--nodes (line 2): '1-' is not N or N-M"),
        ("--account=", "--account (line 2): an empty value"),
        ("--no-requeue", "--no-requeue (line 2): no slurmrestd field carries it the way sbatch does"),
        ("--begin=now+60", "--begin (line 2)=now+60: no slurmrestd field carries it the way sbatch does"),
        ("--nice", "--nice (line 2): no slurmrestd field carries it the way sbatch does"),
        (
            "--signal=B:USR1@60",
            "--signal (line 2)=B:USR1@60: no slurmrestd field carries it the way sbatch does",
        ),
        ("--wrap=id", "--wrap (line 2)=id: no slurmrestd field carries it the way sbatch does"),
        ("--export=NONE", "--export (line 2)=NONE: no slurmrestd field carries it the way sbatch does"),
        ("--exclusive=topo", "--exclusive (line 2)=topo: no slurmrestd field carries it the way sbatch does"),
        ("--part=cpu", "--part (line 2)=cpu: no slurmrestd field carries it the way sbatch does"),
        ("--some-future-option=1", "--some-future-option (line 2)=1: no slurmrestd field carries it"),
        ("--mem=1G --mem-per-cpu=100", "--mem-per-cpu and --mem decide one setting"),
        ("--gres=gpu:1 -G 1", "--gpus and --gres decide one setting"),
        ("--comment 'unclosed", "sbatch's own reading decides: line 2: cannot read #SBATCH directive"),
    ],
)
def test_what_rest_cannot_say_as_sbatch_does_goes_to_sbatch(directive: str, reason: str) -> None:
    assert _only_sbatch(f"#SBATCH {directive}").startswith(reason)


def test_a_script_sbatch_reads_differently_goes_to_sbatch() -> None:
    with pytest.raises(CliOnly, match="no #! line"):
        job_request("echo hi\n", [], ENV, version="v0.0.38")
    with pytest.raises(CliOnly, match="DOS line breaks"):
        job_request("#!/bin/sh\r\necho hi\r\n", [], ENV, version="v0.0.42")
    assert "#PBS lines" in _only_sbatch("#PBS -l walltime=1:00:00")


def test_sbatch_variables_in_the_environment_go_to_sbatch() -> None:
    reason = _only_sbatch(env={**ENV, "SBATCH_TIMELIMIT": "5"})
    assert reason == "environment variable SBATCH_TIMELIMIT: sbatch reads it as an option"


def test_the_environment_is_always_sent_with_sbatchs_umask() -> None:
    assert _job(env={})["environment"] == {"SLURM_UMASK": "0022"}
    assert _job(env={"SLURM_UMASK": "0077"})["environment"] == {"SLURM_UMASK": "0077"}


def test_directives_after_the_first_command_are_not_options() -> None:
    script = "#!/bin/sh\necho hi\n#SBATCH --no-requeue\n"
    assert "requeue" not in job_request(script, [], ENV, version="v0.0.38")["job"]  # type: ignore[operator]


def test_combined_reads_the_command_line_with_the_scripts_rules() -> None:
    found = sbatch.combined("#!/bin/sh\n#SBATCH -J a -t 5\n", ["--job-name=b", "--comment=wlmvk:k x"])
    assert {name: d.value for name, d in found.items()} == {
        "job-name": "b",
        "time": "5",
        "comment": "wlmvk:k x",
    }
    assert found["job-name"].line == 0
    assert found["time"].line == 2


@pytest.mark.parametrize(
    ("offered", "chosen"),
    [
        (["openapi/dbv0.0.38", "openapi/v0.0.38", "openapi/v0.0.36"], "v0.0.38"),
        (["v0.0.38"], "v0.0.38"),
        (["openapi/v0.0.40", "openapi/v0.0.41", "openapi/slurmctld"], None),
        # 24.11's -s list and -d list; 26.05 offers v0.0.42 to v0.0.45
        (["openapi/slurmctld", "openapi/slurmdbd", "data_parser/v0.0.42", "data_parser/v0.0.40"], "v0.0.42"),
        (
            ["data_parser/v0.0.45", "data_parser/v0.0.43", "data_parser/v0.0.42", "data_parser/v0.0.44"],
            "v0.0.42",
        ),
        (["data_parser/v0.0.41", "data_parser/v0.0.40"], None),
        ([], None),
    ],
)
def test_the_version_is_chosen_from_what_slurmrestd_offers(offered: list[str], chosen: str | None) -> None:
    assert restfields.choose_version(offered) == chosen


def test_the_plugins_slurmrestd_loads_for_each_version() -> None:
    assert restfields.plugin_options("v0.0.38") == ["-s", "openapi/v0.0.38"]
    assert restfields.plugin_options("v0.0.42") == ["-s", "openapi/slurmctld", "-d", "data_parser/v0.0.42"]


@pytest.mark.parametrize(
    ("directive", "field", "value"),
    [
        ("--time=5", "time_limit", 5),
        ("--mem=4G", "memory_per_node", 4096),
        ("-N 2", "nodes", "2-2"),
        ("--gres=gpu:1", "tres_per_node", "gres/gpu:1"),
        ("--gres=gpu:tesla:2,mps:10", "tres_per_node", "gres/gpu:tesla:2,gres/mps:10"),
        ("-G 2", "tres_per_job", "gres/gpu:2"),
        ("--gpus-per-node=1", "tres_per_node", "gres/gpu:1"),
        ("--gpus-per-task=tesla:1", "tres_per_task", "gres/gpu:tesla:1"),
        ("--mail-type=end,FAIL", "mail_type", ["END", "FAIL"]),
        ("--oversubscribe", "shared", ["oversubscribe"]),
        ("--exclusive", "shared", ["none"]),
        ("--exclusive=user", "shared", ["user"]),
        ("--exclusive=mcs", "shared", ["mcs"]),
        ("--hold", "hold", True),
        ("-c 2", "cpus_per_task", 2),
        ("-c 2", "tres_per_task", "cpu=2"),  # as sbatch 24.11 and 26.05 send it
    ],
)
def test_each_directive_becomes_its_v0_0_42_field(directive: str, field: str, value: object) -> None:
    assert _job(f"#SBATCH {directive}", version="v0.0.42")[field] == value


def test_v0_0_42_leaves_oom_kill_step_unset_as_sbatch_does() -> None:
    assert _job(version="v0.0.42")["oom_kill_step"] == 0xFFFE
    assert "oom_kill_step" not in _job(version="v0.0.38")


def test_v0_0_42_sends_the_environment_as_lines() -> None:
    assert _job(env={"A": "b=c"}, version="v0.0.42")["environment"] == ["SLURM_UMASK=0022", "A=b=c"]


@pytest.mark.parametrize(
    ("directive", "reason"),
    [
        ("--mail-type=ALL", "--mail-type (line 2): 'ALL' has a mail type this table does not convert"),
        ("--gres=gres/gpu:1", "--gres (line 2): 'gres/gpu:1' is not a gres list this table converts"),
        ("--gres=gpu:1,", "--gres (line 2): 'gpu:1,' is not a gres list this table converts"),
        ("--exclusive --oversubscribe", "--oversubscribe and another option write one field, shared"),
        ("-c 2 --gpus-per-task=1", "--cpus-per-task and another option write one field, tres_per_task"),
    ],
)
def test_what_v0_0_42_cannot_say_as_sbatch_does_goes_to_sbatch(directive: str, reason: str) -> None:
    with pytest.raises(CliOnly) as refused:
        _job(f"#SBATCH {directive}", version="v0.0.42")
    assert refused.value.reason == reason


@pytest.mark.parametrize("version", restfields.VERSIONS)
@pytest.mark.parametrize(
    "lines",
    [
        (),
        ("#SBATCH --hold", "#SBATCH --output=/dev/null"),
        ("#SBATCH -N 2 -c 4 --mem=2G --time=1:30", "#SBATCH --exclusive --job-name='a \"quoted\" name'"),
    ],
)
def test_the_body_with_an_environment_encoded_once_is_the_body_of_the_job(
    version: str, lines: tuple[str, ...]
) -> None:
    script = "\n".join(["#!/bin/sh", *lines, "echo 'ü'"]) + "\n"
    argv = ["--partition=debug", "--comment=wlmvk:uid-1"]
    env = {**ENV, "QUOTE": 'a "b" \\ ü'}
    expected = job_request(script, argv, env, version=version)
    encoded = restfields.environment(env, version=version)
    assert json.loads(restfields.request_body(script, argv, encoded, version=version)) == expected
    assert json.loads(restfields.request_body(script, argv, env, version=version)) == expected


def test_an_environment_encoded_once_is_refused_as_its_variables_are() -> None:
    script = "#!/bin/sh\necho hi\n"
    encoded = restfields.environment({**ENV, "SBATCH_PARTITION": "gpu"}, version="v0.0.42")
    with pytest.raises(CliOnly, match="SBATCH_PARTITION"):
        restfields.request_body(script, [], encoded, version="v0.0.42")
    with pytest.raises(CliOnly, match="#!"):  # the script is still checked first
        restfields.request_body(
            "echo hi\n", [], restfields.environment(ENV, version="v0.0.42"), version="v0.0.42"
        )
    with pytest.raises(ValueError, match=r"v0\.0\.38, not v0\.0\.42"):
        restfields.request_body(script, [], restfields.environment(ENV, version="v0.0.38"), version="v0.0.42")
