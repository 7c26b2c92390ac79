"""The KeptOriginals contract (rag_core.ports.KeptOriginals): what `reindex` and `rebuild` read documents
and their original bytes from. A test module subclasses `KeptOriginalsContract` once per adapter and
provides a `source` fixture holding `FILES` (or its own `FILES`), each doc_id with exactly those bytes
kept, and, when the adapter can list a document without its bytes (`LISTS_WITHOUT_BYTES`),
`WITHOUT_BYTES` listed with `has_original` False.
"""

from __future__ import annotations

import pytest

from rag_core.errors import StoreError
from rag_core.ports import KeptOriginals

FILES = {
    "a.md": b"# A\n\nThe first document, about alpha.\n",
    "a.md/inside.md": b"# Inside\n\nA folder named like a document.\n",
    "runbooks/磁盘.md": "# 磁盘空间不足\n\n清理日志文件。\n".encode(),
    'quote"and\\slash.md': b"# Quote\n\nA doc_id with a quote and a backslash.\n",
}
WITHOUT_BYTES = "gone.md"


class KeptOriginalsContract:
    FILES = FILES  # what `source` holds (the older folder layout cannot hold both a.md and a.md/inside.md)
    LISTS_WITHOUT_BYTES = True  # the adapter can hold a document whose bytes are not kept

    @pytest.fixture
    def source(self) -> KeptOriginals:
        raise NotImplementedError("a test module provides the adapter under test")

    def test_is_kept_originals(self, source: KeptOriginals) -> None:
        assert isinstance(source, KeptOriginals)

    def test_lists_each_document_once_sorted(self, source: KeptOriginals) -> None:
        listed = [d.doc_id for d in source.list_documents()]
        assert listed == sorted(set(listed))
        assert set(self.FILES) <= set(listed)
        kept = {d.doc_id: d.has_original for d in source.list_documents()}
        assert all(kept[doc_id] for doc_id in self.FILES)

    def test_reads_exactly_the_bytes_kept(self, source: KeptOriginals) -> None:
        for doc_id, data in self.FILES.items():
            assert source.read_original(doc_id) == data, doc_id

    @pytest.mark.parametrize("doc_id", ["absent.md", 'x" or id != "', "../a.md", "A.md", "a.md/"])
    def test_a_document_it_does_not_hold_is_none(self, source: KeptOriginals, doc_id: str) -> None:
        assert source.read_original(doc_id) is None

    def test_a_document_listed_without_bytes_never_gives_bytes(self, source: KeptOriginals) -> None:
        missing = [d.doc_id for d in source.list_documents() if not d.has_original]
        assert missing == ([WITHOUT_BYTES] if self.LISTS_WITHOUT_BYTES else [])
        for doc_id in missing:
            try:
                assert source.read_original(doc_id) is None
            except StoreError as exc:
                assert doc_id in str(exc)  # the reason names the document
