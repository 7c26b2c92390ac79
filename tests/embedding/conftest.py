import pytest

from rag_core.embedding.local import TEST_CACHE_ENV


@pytest.fixture(autouse=True)
def _no_embedding_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """The embedders' own tests compute every vector (the suite's cache, tests/conftest.py, is for the others)."""
    monkeypatch.delenv(TEST_CACHE_ENV, raising=False)
