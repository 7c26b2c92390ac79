"""Fixtures shared by every test package. Keep this small: packages add their own conftest.py."""

from __future__ import annotations

import pytest

from rag_core.embedding.local import LocalUSEEmbedder


@pytest.fixture(scope="session")
def local_embedder() -> LocalUSEEmbedder:
    """The real bundled embedder, loaded once per test session (~0.7 s)."""
    return LocalUSEEmbedder()
