"""User tokens: random, shown once, kept as a hash.

A token is `rwb_` + 32 random bytes in URL-safe base64 (256 bits): it cannot be guessed, so a fast hash (SHA-256)
is enough to keep it (a slow password hash such as scrypt or Argon2 protects low-entropy passwords from a
stolen database; here it would only add its cost to every request). The prefix lets secret scanners find a
leaked one. Comparison happens on the hash, as an indexed lookup.
"""

from __future__ import annotations

import hashlib
import secrets

PREFIX = "rwb_"


def new_token() -> str:
    return PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
