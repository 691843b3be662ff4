"""The only place that spawns Slurm commands."""
