"""wlmvk: Slurm partitions as Kubernetes nodes, pods as Slurm jobs."""

__version__ = "0.1.0"
