"""Pods as Slurm jobs: the pod controller (Kubernetes side), the Slurm provider, the status
poller, each pod's stage and record, and the two pure translations (pod -> job, job -> status)."""
