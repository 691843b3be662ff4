"""The SlurmJob / WlmJob controller."""
