"""The gRPC client of red-box: the Backend Protocol over the WLM API."""
