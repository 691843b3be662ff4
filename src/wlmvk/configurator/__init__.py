"""Partition discovery for the configurator DaemonSet."""
