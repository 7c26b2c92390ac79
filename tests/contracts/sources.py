"""The `SourceReader` contract (rag_core/ports.py), run on every source type's reader (folder, git, web).

Subclass `SourceReaderContract` with three fixtures: `reader` (a source holding at least two items), `broken`
(a reader and the path of one of its items that cannot be read) and `unreachable` (a reader whose source cannot be
listed at all).
"""

from __future__ import annotations

from typing import Any

import pytest

from rag_core.errors import SourceError
from rag_core.ports import SourceReader


def one_line(error: BaseException) -> str:
    """The error's text, checked to be one line without a traceback."""
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text, text
    return text


class SourceReaderContract:
    @pytest.fixture
    def reader(self) -> SourceReader:
        raise NotImplementedError("provide a reader of a source with at least two items")

    @pytest.fixture
    def broken(self) -> tuple[SourceReader, str]:
        raise NotImplementedError("provide a reader and the path of its item that cannot be read")

    @pytest.fixture
    def unreachable(self) -> SourceReader:
        raise NotImplementedError("provide a reader of a source that cannot be listed")

    def test_is_a_source_reader_that_names_its_source(self, reader: Any) -> None:
        assert isinstance(reader, SourceReader)
        assert reader.describe() and "\n" not in reader.describe()

    def test_items_are_unique_relative_and_stable(self, reader: Any) -> None:
        first = [i.path for i in reader.items()]
        assert len(first) >= 2 and len(set(first)) == len(first)
        for path in first:
            assert path and not path.startswith("/") and "\\" not in path, path
            assert ".." not in path.split("/") and "" not in path.split("/"), path
        assert [i.path for i in reader.items()] == first
        assert [i.version for i in reader.items()] == [i.version for i in reader.items()]

    def test_read_gives_bytes(self, reader: Any) -> None:
        for item in reader.items():
            assert isinstance(item.read(), bytes)
            assert isinstance(item.version, str) and isinstance(item.url, str)
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in item.meta.items())

    def test_an_item_that_cannot_be_read_raises_source_error_naming_it(self, broken: Any) -> None:
        reader, path = broken
        [item] = [i for i in reader.items() if i.path == path]
        with pytest.raises(SourceError, match=path) as caught:
            item.read()
        assert "\n" not in str(caught.value)

    def test_a_source_that_cannot_be_listed_raises_source_error(self, unreachable: Any) -> None:
        with pytest.raises(SourceError) as caught:
            list(unreachable.items())
        assert "\n" not in str(caught.value)
