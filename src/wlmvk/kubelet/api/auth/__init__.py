"""Who may use the kubelet API: the pure rules (users, attributes, review bodies) and the gate
that checks each request with the API server."""
