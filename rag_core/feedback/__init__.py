"""Recorded chat turns and their ratings (👍/👎 with a comment): the records and the SQLite store every entry
point shares (the chat page, the CLI, the HTTP API), from which the Failures page makes test cases."""

from .records import Lookup, TurnRecord, parse_rating, rating_name
from .store import FILE_NAME, TurnStore

__all__ = ["FILE_NAME", "Lookup", "TurnRecord", "TurnStore", "parse_rating", "rating_name"]
