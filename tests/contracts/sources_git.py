"""The SourceReader contract (rag_core.ports.SourceReader), checked on every source's reader (issue 38).

Written with the git reader (tests/sources/test_git.py); the lead merges it with the other readers' into
tests/contracts/sources.py. A test module subclasses `SourceReaderContract` and provides `reader` (a reader over a
source holding at least two items), `break_items` (makes the items `reader` listed unreadable: their source's
content gone) and `unreachable` (a reader whose source cannot be reached).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rag_core.errors import SourceError
from rag_core.ports import SourceReader


class SourceReaderContract:
    @pytest.fixture
    def reader(self) -> SourceReader:
        raise NotImplementedError("a test module provides the reader under test")

    @pytest.fixture
    def break_items(self, reader: SourceReader) -> Callable[[], None]:
        raise NotImplementedError("a test module says how to make the listed items unreadable")

    @pytest.fixture
    def unreachable(self) -> SourceReader:
        raise NotImplementedError("a test module provides a reader whose source cannot be reached")

    def test_is_a_source_reader(self, reader: SourceReader) -> None:
        assert isinstance(reader, SourceReader)
        assert reader.describe() and "\n" not in reader.describe()

    def test_paths_are_unique_relative_and_stable(self, reader: SourceReader) -> None:
        first = list(reader.items())
        paths = [item.path for item in first]
        assert len(paths) >= 2 and len(set(paths)) == len(paths)
        for path in paths:
            assert path and not path.startswith("/") and "\\" not in path and ".." not in path.split("/")
        again = list(reader.items())
        assert [i.path for i in again] == paths and [i.version for i in again] == [i.version for i in first]

    def test_read_gives_bytes_and_meta_is_text(self, reader: SourceReader) -> None:
        for item in reader.items():
            assert isinstance(item.read(), bytes)
            assert all(isinstance(k, str) and isinstance(v, str) for k, v in item.meta.items())

    def test_an_unreadable_item_raises_source_error_naming_it(self, reader: SourceReader,
                                                             break_items: Callable[[], None]) -> None:
        items = list(reader.items())
        break_items()
        with pytest.raises(SourceError) as failed:
            items[0].read()
        assert items[0].path in str(failed.value) and "\n" not in str(failed.value)

    def test_an_unreachable_source_raises_source_error_from_items(self, unreachable: SourceReader) -> None:
        with pytest.raises(SourceError) as failed:
            list(unreachable.items())
        assert "\n" not in str(failed.value)
