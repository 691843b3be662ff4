"""The only layer that talks to Kubernetes (kubernetes_asyncio)."""
