"""An in-memory Kubernetes API server for tests and the local demo."""
