"""`python -m rag_core feedback list|rate`: the recorded chat turns (data/turns.db) and their ratings, as the
Failures page and `/api/feedback` show them. The global `--kb` filters the list by knowledge base."""

from __future__ import annotations

import argparse

from ..bootstrap import build_turn_store
from ..config import Settings
from ..errors import RagError
from ..feedback import parse_rating, rating_name
from . import audit
from .output import format_table, print_json

RATING_FILTERS = ("up", "down", "rated", "any")


def cmd_list(args: argparse.Namespace, settings: Settings) -> int:
    rating = None if args.rating in ("any", "rated") else parse_rating(args.rating)
    turns = build_turn_store(settings).find(rating=rating, rated=args.rating == "rated", kb=args.kb,
                                            since=args.since, until=args.until, limit=args.limit, user=args.user)
    if args.json:
        print_json([t.to_dict() for t in turns])
        return 0
    if not turns:
        print("no recorded turns match")
        return 0
    rows = [{"when": t.created_at[:19].replace("T", " "), "rating": {"up": "👍", "down": "👎"}.get(
                rating_name(t.rating) or "", ""), "kb": ",".join(t.knowledge_bases), "user": t.user_name,
             "question": t.question[:60], "comment": t.comment[:40], "trace_id": t.trace_id} for t in turns]
    print(format_table(rows, ["when", "rating", "kb", "user", "question", "comment", "trace_id"]))
    return 0


def cmd_rate(args: argparse.Namespace, settings: Settings) -> int:
    rating = parse_rating(args.rating)
    if rating is None:
        raise RagError(f'The rating must be "up" or "down", got {args.rating!r}.')
    record = build_turn_store(settings).rate(rating, args.comment, trace_id=args.trace_id)
    kbs = record.knowledge_bases
    detail: dict[str, object] = {"rating": rating_name(rating)}
    if args.comment is not None:
        detail["comment"] = args.comment[:200]
    if len(kbs) > 1:
        detail["knowledge_bases"] = list(kbs)
    audit.record(settings, "feedback.rate", kbs[0] if len(kbs) == 1 else "", record.trace_id, detail)
    if args.json:
        print_json(record.to_dict())
    else:
        print(f"rated {rating_name(rating)}: {record.question[:80]!r} ({record.created_at[:19]})")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("feedback", help="list the recorded chat turns and their ratings, or rate one",
                       description="Every chat turn (the app, the API, `chat`) is recorded in data/turns.db with "
                                   "its lookups, answer and trace id; feedback.retention-days and "
                                   "feedback.max-turns bound it.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    ls = actions.add_parser("list", help="recorded turns, newest first")
    ls.add_argument("--rating", choices=RATING_FILTERS, default="any", help="only 👍 (up), 👎 (down) or rated turns")
    ls.add_argument("--since", metavar="DATE", help="from this date or time (UTC, ISO 8601)")
    ls.add_argument("--until", metavar="DATE", help="up to this date (inclusive) or time")
    ls.add_argument("--user", help="only turns this person asked (a user's name, local for the one-person app or "
                                   "API, cli:<OS user> for `chat`)")
    ls.add_argument("--limit", type=int, default=100, help="at most this many (default 100)")
    ls.add_argument("--json", action="store_true", help="as JSON (the same objects as GET /api/feedback)")
    ls.set_defaults(func=cmd_list)
    rate = actions.add_parser("rate", help="rate a turn by its trace id")
    rate.add_argument("trace_id", help="the turn's trace id (`feedback list` shows it)")
    rate.add_argument("rating", help="up or down")
    rate.add_argument("--comment", help="what was wrong, or right (left out: the turn's comment stays; \"\": removed)")
    rate.add_argument("--json", action="store_true", help="the rated turn as JSON")
    rate.set_defaults(func=cmd_rate)
