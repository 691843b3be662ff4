"""red-box: the WLM gRPC daemon that wraps the Slurm CLI."""
