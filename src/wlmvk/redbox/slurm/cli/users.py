"""The user red-box's Slurm commands run for, given by name or by uid (``--user``)."""

from __future__ import annotations

import pwd

from wlmvk.core.errors import InvalidInput


def user_id(user: str) -> int:
    """The uid of the user given by name or uid (what squeue's ``-u`` and a dump's ``user_id`` name)."""
    if user.isdigit():
        return int(user)
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError as exc:
        raise InvalidInput(f"no such user: {user!r}") from exc


def user_name(user: str) -> str:
    """The name of the user given by name or uid (``%u`` of a job's output path)."""
    if not user.isdigit():
        return user
    try:
        return pwd.getpwuid(int(user)).pw_name
    except KeyError:
        return user
