"""What a user's and a group's name may be."""

from __future__ import annotations

import re

from ..errors import AccessError

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


def check_name(name: str, what: str = "user") -> str:
    if not NAME.match(name or ""):
        raise AccessError(f"A {what} name is 1-64 letters, digits, '.', '_', '@' or '-' (starting with a letter or "
                          f"digit), got {name!r}.")
    return name
