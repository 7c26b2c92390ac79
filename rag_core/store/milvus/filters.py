"""Milvus filter expressions built safely.

Raw strings are never interpolated into an expression: every value becomes a quoted Milvus string
literal in which `\\` and `"` are escaped (a JSON-style literal, which Milvus 2.5 parses), so a value
like `x" or id != "` stays one literal and can never widen a delete. Only top-level fields are filtered
(JSON-key filters are slow and limited): scalars, and `labels`, the ARRAY of `key=value` strings metadata
filters match (scope), through `array_contains_any`; and `access`, an `AccessFilter` (access.groups): rows of the
documents a restricted lookup may retrieve (`doc_id not in [...]`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...access.groups import AccessFilter
from ...errors import StoreError

FILTERABLE_FIELDS = ("doc_id", "source", "version", "id", "key", "name", "labels")
ACCESS = "access"  # the filter entry holding an AccessFilter (not a field: it filters `labels`)


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


def label_groups(labels: Iterable[str]) -> list[list[str]]:
    """`key=value` strings grouped by key (sorted): a row must carry one label of every group."""
    by_key: dict[str, list[str]] = {}
    for item in labels:
        key, sep, _ = item.partition("=")
        if not sep or not key:
            raise StoreError(f"A label filter is key=value text, got {item!r}.")
        by_key.setdefault(key, []).append(item)
    return [values for _, values in sorted(by_key.items())]


def labelled(labels: Iterable[str]) -> str:
    """Rows carrying, for every key among `labels` (`key=value` strings), one of that key's: several values of one
    key are OR, different keys AND."""
    return all_of(*(f"array_contains_any(labels, [{', '.join(literal(v) for v in group)}])"
                    for group in label_groups(labels)))


def visible(access: AccessFilter) -> str:
    """Rows a restricted lookup may retrieve: those of documents not hidden from it (access.groups explains why a
    doc_id list and not a negated label filter: Milvus Lite rejects `not`)."""
    return f"doc_id not in [{', '.join(literal(v) for v in access.hidden)}]" if access.hidden else ""


def carries(carried: Iterable[str], labels: Iterable[str]) -> bool:
    """`labelled` in Python, for stores that filter rows themselves (store.memory)."""
    own = set(carried)
    return all(own.intersection(group) for group in label_groups(labels))


def all_of(*clauses: str) -> str:
    return " and ".join(f"({c})" for c in clauses if c)


def normalize(filters: Mapping[str, Any] | None,
              allowed: Sequence[str] = FILTERABLE_FIELDS) -> dict[str, tuple[str, ...]]:
    """{"doc_id": "a.md"} or {"doc_id": ["a.md", "b.md"]} -> {"doc_id": ("a.md", "b.md")}, checked: only
    `allowed` fields, only string values. Every store reads filters through this, so all agree."""
    out: dict[str, tuple[str, ...]] = {}
    for name, value in sorted((filters or {}).items()):
        if name == ACCESS and ACCESS in allowed:
            if not isinstance(value, AccessFilter):
                raise StoreError(f"Filter {ACCESS!r}: expected an AccessFilter, got {type(value).__name__}.")
            continue  # not a field's values: `access_of` reads it
        if name not in allowed:
            raise StoreError(f"Cannot filter on {name!r}; filterable fields: {', '.join(allowed)}.")
        values = (value,) if isinstance(value, str) else value
        if not isinstance(values, (list, tuple, set, frozenset)) or not all(isinstance(v, str) for v in values):
            raise StoreError(f"Filter {name!r}: expected a string or a list of strings, got {value!r}.")
        out[name] = tuple(sorted(values)) if isinstance(values, (set, frozenset)) else tuple(values)
    return out


def access_of(filters: Mapping[str, Any] | None) -> AccessFilter | None:
    """The AccessFilter among `filters` (None: the lookup is not restricted)."""
    found = (filters or {}).get(ACCESS)
    return found if isinstance(found, AccessFilter) else None


def from_mapping(filters: Mapping[str, Any] | None, allowed: Sequence[str] = FILTERABLE_FIELDS) -> str:
    """{"doc_id": "a.md"} or {"doc_id": ["a.md", "b.md"], "source": "x"} -> a safe expression; `labels`: see
    `labelled`; `access` (an AccessFilter, where `allowed` has it): see `visible`."""
    access = access_of(filters) if ACCESS in allowed else None
    clauses = [visible(access)] if access is not None else []
    for name, values in normalize(filters, allowed).items():
        if name == "labels":
            clauses.append(labelled(values))
        else:
            clauses.append(equals(name, values[0]) if len(values) == 1 else one_of(name, values))
    return all_of(*clauses)
