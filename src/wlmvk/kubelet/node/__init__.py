"""Node objects for Slurm partitions: the node controller, the pure Node pieces, the
directory of owned nodes, red-box's reachability."""
