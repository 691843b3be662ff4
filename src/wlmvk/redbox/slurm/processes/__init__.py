"""Child processes: spawning, the command runner, and commands run inside running jobs (exec)."""
