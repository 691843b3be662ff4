"""Slurm's language, shared by the kubelet, the operator and red-box: #SBATCH directives, durations,
memory, GRES and GPUs, and tenancy's rule over them (pure: values in, values out)."""
