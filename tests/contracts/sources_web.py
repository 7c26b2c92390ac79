"""The SourceReader contract (ports.SourceReader), mixin-style, written with the web source (issue 38); the lead merges
it with the other sources' into tests/contracts/sources.py.

A test class subclasses `SourceReaderContract` and provides the fixtures:

- `reader`: a reader of a source holding at least two items;
- `broken`: `(reader, path)`, a reader one of whose items (at `path`) cannot be read;
- `unreachable`: a reader whose source itself cannot be read.
"""

from __future__ import annotations

from typing import Any

import pytest

from rag_core.errors import SourceError


def one_line(error: BaseException) -> str:
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text, text
    return text


class SourceReaderContract:
    def test_items_are_unique_relative_and_stable(self, reader: Any) -> None:
        first = [item.path for item in reader.items()]
        assert len(first) >= 2 and len(set(first)) == len(first)
        for path in first:
            assert path and not path.startswith("/") and "\\" not in path, path
            assert ".." not in path.split("/") and "" not in path.split("/"), path
        assert [item.path for item in reader.items()] == first

    def test_read_returns_bytes(self, reader: Any) -> None:
        for item in reader.items():
            assert isinstance(item.read(), bytes)
            assert isinstance(item.version, str) and isinstance(item.url, str)

    def test_a_broken_item_raises_source_error_on_read(self, broken: Any) -> None:
        reader, path = broken
        item = next(i for i in reader.items() if i.path == path)
        with pytest.raises(SourceError) as raised:
            item.read()
        one_line(raised.value)

    def test_an_unreachable_source_raises_source_error_from_items(self, unreachable: Any) -> None:
        with pytest.raises(SourceError) as raised:
            list(unreachable.items())
        one_line(raised.value)

    def test_describe_names_the_source(self, reader: Any) -> None:
        assert one_line(Exception(reader.describe()))
