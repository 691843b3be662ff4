"""WLM-neutral values, errors, names and helpers shared by every layer."""
