"""slurmrestd: red-box's own daemon, its HTTP connection, the JSON it takes and the job dump it gives."""
