"""Test fixtures of high fidelity (the in-memory Kubernetes API server)."""
