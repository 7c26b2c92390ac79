"""Milvus filter expressions built safely.

Raw strings are never interpolated into an expression: every value becomes a quoted Milvus string
literal in which `\\` and `"` are escaped (a JSON-style literal, which Milvus 2.5 parses), so a value
like `x" or id != "` stays one literal and can never widen a delete. Only top-level scalar fields are
filtered (JSON-key filters are slow and limited).
"""

from __future__ import annotations

import json
from typing import Iterable, Mapping, Sequence

from ..errors import StoreError

FILTERABLE_FIELDS = ("doc_id", "source", "version", "id", "key")


def literal(value: str) -> str:
    """A Milvus string literal for `value`, with `"` and `\\` escaped."""
    if not isinstance(value, str):
        raise StoreError(f"Filter values must be strings, got {type(value).__name__}.")
    if "\x00" in value:
        raise StoreError("Filter values must not contain NUL characters.")
    return json.dumps(value, ensure_ascii=False)


def _field(name: str) -> str:
    if name not in FILTERABLE_FIELDS:
        raise StoreError(f"Cannot filter on {name!r}; filterable fields: {', '.join(FILTERABLE_FIELDS)}.")
    return name


def equals(field: str, value: str) -> str:
    return f"{_field(field)} == {literal(value)}"


def one_of(field: str, values: Iterable[str]) -> str:
    items = ", ".join(literal(v) for v in values)
    return f"{_field(field)} in [{items}]"


def all_of(*clauses: str) -> str:
    return " and ".join(f"({c})" for c in clauses if c)


def from_mapping(filters: Mapping[str, str | Sequence[str]] | None) -> str:
    """{"doc_id": "a.md"} or {"doc_id": ["a.md", "b.md"], "source": "x"} -> a safe expression."""
    if not filters:
        return ""
    clauses = []
    for name, value in sorted(filters.items()):
        clauses.append(equals(name, value) if isinstance(value, str) else one_of(name, value))
    return all_of(*clauses)
