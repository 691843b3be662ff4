"""The virtual kubelet: Slurm partitions as nodes, pods as Slurm jobs."""
