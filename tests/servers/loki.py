"""A fake Grafana Loki speaking the real query API: `GET /loki/api/v1/query_range`.

    with LokiServer(streams) as loki:
        ...  # point logs.loki-url at loki.url

It parses the LogQL a client sends (a stream selector with =, !=, =~, !~ matchers, then `|=`, `!=`, `|~`,
`!~` line filters) and answers `{"status": "success", "data": {"resultType": "streams", "result": [...]}}`
with the entries in [start, end), at most `limit`, in `direction` order. It refuses what Loki refuses,
as Loki does (HTTP 400, plain text): a syntax error, a selector whose matchers all match the empty
string, a limit above `max_entries` (5000), a range above `max_range` (30d1h). With `token` set it wants
`Authorization: Bearer <token>`; with `tenant` set, `X-Scope-OrgID` (else 401 "no org id").
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from . import FakeServer, RecordedRequest, Reply

__all__ = ["LokiServer"]

_STRING = r'"(?:[^"\\]|\\.)*"|`[^`]*`'
_MATCHER = re.compile(rf'\s*([A-Za-z_]\w*)\s*(=~|!~|!=|=)\s*({_STRING})\s*(,|$)')
_FILTER = re.compile(rf'\s*(\|=|!=|\|~|!~)\s*({_STRING})')


class LogQLError(ValueError):
    pass


def _unquote(raw: str) -> str:
    return raw[1:-1] if raw.startswith("`") else json.loads(raw)


def _selector_end(query: str) -> int:
    """Index of the } closing the stream selector (the first one outside a string)."""
    quote, i = "", 1
    while i < len(query):
        ch = query[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"`":
            quote = ch
        elif ch == "}":
            return i
        i += 1
    raise LogQLError("parse error at line 1, col 1: syntax error: unexpected $end, expecting } or ,")


def parse_logql(query: str) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    query = query.strip()
    if not query.startswith("{") or "}" not in query:
        raise LogQLError("parse error at line 1, col 1: syntax error: unexpected IDENTIFIER")
    close = _selector_end(query)
    selector, rest = query[1:close], query[close + 1:]
    matchers, pos = [], 0
    while pos < len(selector):
        m = _MATCHER.match(selector, pos)
        if not m:
            raise LogQLError(
                f"parse error at line 1, col {pos + 2}: syntax error: unexpected IDENTIFIER, expecting STRING"
            )
        matchers.append((m.group(1), m.group(2), _unquote(m.group(3))))
        pos = m.end()
    if not matchers:
        raise LogQLError("parse error at line 1, col 2: syntax error: unexpected }")
    filters, pos = [], 0
    while pos < len(rest.rstrip()):
        f = _FILTER.match(rest, pos)
        if not f:
            raise LogQLError(f"parse error at line 1, col {close + pos + 2}: syntax error: unexpected IDENTIFIER")
        filters.append((f.group(1), _unquote(f.group(2))))
        pos = f.end()
    return matchers, filters


def _matches(op: str, actual: str, value: str) -> bool:
    if op == "=":
        return actual == value
    if op == "!=":
        return actual != value
    full = re.fullmatch(value, actual) is not None
    return full if op == "=~" else not full


def _empty_compatible(op: str, value: str) -> bool:
    if op == "=":
        return value == ""
    if op == "=~":
        return re.fullmatch(value, "") is not None
    return True  # != and !~ also match streams without the label


def _line_matches(op: str, needle: str, line: str) -> bool:
    if op == "|=":
        return needle in line
    if op == "!=":
        return needle not in line
    return (re.search(needle, line) is not None) == (op == "|~")


def select(streams: list[dict[str, Any]], matchers: list[tuple[str, str, str]], filters: list[tuple[str, str]],
           start: int, end: int, direction: str) -> list[tuple[dict[str, str], str, str]]:
    """(labels, ts, line) of the entries in [start, end) that match, sorted by time in `direction`."""
    entries = []
    for stream in streams:
        labels = stream["stream"]
        if not all(_matches(op, labels.get(name, ""), value) for name, op, value in matchers):
            continue
        for ts, line in stream["values"]:
            if start <= int(ts) < end and all(_line_matches(op, needle, line) for op, needle in filters):
                entries.append((labels, ts, line))
    entries.sort(key=lambda e: int(e[1]), reverse=direction == "backward")
    return entries


class LokiServer(FakeServer):
    def __init__(self, streams: list[dict[str, Any]] | None = None, *, token: str | None = None,
                 tenant: str | None = None, max_entries: int = 5000, max_range_hours: float = 721) -> None:
        super().__init__()
        self.streams = list(streams or [])
        self.token = token
        self.tenant = tenant
        self.max_entries = max_entries
        self.max_range_ns = int(max_range_hours * 3600 * 1e9)

    def queries(self) -> list[dict[str, str]]:
        return [{k: v[0] for k, v in parse_qs(urlsplit(r.path).query).items()} for r in self.requests]

    def handle(self, request: RecordedRequest) -> Reply:
        url = urlsplit(request.path)
        if url.path != "/loki/api/v1/query_range":
            return Reply.text(404, "404 page not found\n")
        if self.token is not None and request.header("authorization") != f"Bearer {self.token}":
            return Reply.text(401, "Unauthorized\n")
        if self.tenant is not None and request.header("x-scope-orgid") != self.tenant:
            return Reply.text(401, "no org id\n")
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        try:
            matchers, filters = parse_logql(params.get("query", ""))
        except LogQLError as exc:
            return Reply.text(400, f"{exc}\n")
        except (ValueError, re.error) as exc:
            return Reply.text(400, f"parse error: {exc}\n")
        if all(_empty_compatible(op, value) for _, op, value in matchers):
            return Reply.text(400, "queries require at least one regexp or equality matcher that does not have an "
                                   "empty-compatible value. For instance, app=~\".*\" does not meet this requirement, "
                                   "but app=~\".+\" will\n")
        limit = int(params.get("limit", 100))
        if limit > self.max_entries:
            return Reply.text(400, f"max entries limit per query exceeded, limit > max_entries_limit "
                                   f"({limit} > {self.max_entries})\n")
        start, end = int(params["start"]), int(params["end"])
        if end - start > self.max_range_ns:
            return Reply.text(400, "the query time range exceeds the limit (query length: "
                                   f"{(end - start) / 3.6e12:.0f}h, limit: 30d1h)\n")
        entries = select(self.streams, matchers, filters, start, end, params.get("direction", "backward"))[:limit]
        result: dict[str, dict[str, Any]] = {}
        for labels, ts, line in entries:
            key = json.dumps(labels, sort_keys=True)
            result.setdefault(key, {"stream": labels, "values": []})["values"].append([ts, line])
        return Reply.json(200, {"status": "success", "data": {
            "resultType": "streams", "result": list(result.values()),
            "stats": {"summary": {"totalEntriesReturned": len(entries)}}}})
