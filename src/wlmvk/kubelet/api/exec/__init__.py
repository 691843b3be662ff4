"""kubectl exec: the transport-independent request and handler, the SPDY/3.1 and WebSocket
transports, and the remote command protocol."""
