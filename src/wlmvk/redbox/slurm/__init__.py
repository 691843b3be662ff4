"""red-box's Slurm side, the only place that spawns Slurm commands: the CLI and its parsers
(``cli``), slurmrestd (``rest``), child processes (``processes``), and the exactly-once verdict
both submission paths follow (``verdicts``)."""
