"""The Slurm CLI: the commands red-box runs (``commands``) and the pure parsers of what they print."""
