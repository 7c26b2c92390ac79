"""`/api/feedback`: rate a recorded chat turn (👍/👎 and a comment) from any front end, and list the turns. Answers
name fields as the /api routes do, in camelCase (`traceId`, `sessionId`, `turnIndex`, `createdAt`, ...); the CLI's
`feedback list --json` has the same fields in snake_case.

A turn is named by its trace id (`traceId` of a chat answer, `trace_id` of the stream's `citations` event), or by
its session id and turn index (`sessionId` + `turnIndex`). In SuperBizAgent's envelope, like the other /api routes.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.concurrency import run_in_threadpool

from ..access.records import Principal, Role
from ..errors import TurnNotFound, TurnQueryError
from ..feedback import TurnStore, parse_rating
from ..feedback.records import TurnRecord
from ..feedback.store import parse_when
from . import audit
from .deps import Needs, ServiceDep, kb_in_query
from .errors import ApiError
from .models import Envelope, FeedbackRequest
from .state import Service

router = APIRouter(prefix="/api", tags=["feedback"])


def _store(svc: Service) -> TurnStore:
    if svc.turns is None:
        raise ApiError(503, "unavailable", "This server records no chat turns.")
    return svc.turns


@router.post("/feedback", response_model=Envelope[dict[str, Any]], summary="Rate a chat turn (👍 / 👎, a comment)",
             responses={404: {"description": "No such recorded turn"}, 422: {"description": "A bad rating or turn"}})
async def rate(body: FeedbackRequest, svc: ServiceDep,
               principal: Annotated[Principal, Depends(Needs(None))]) -> Envelope[dict[str, Any]]:
    """`{"traceId": "...", "rating": "down", "comment": "..."}` or `{"sessionId": "...", "turnIndex": 0,
    "rating": "up"}`. A later rating of the same turn replaces the earlier one. Answers the turn as recorded.
    Needs the reader role on a knowledge base the turn searched (a turn on others is answered as unknown)."""
    rating = parse_rating(body.rating)
    if rating is None:
        raise ApiError(422, "unprocessable", f'rating must be "up" or "down" (or 1 / -1), got {body.rating!r}.')
    trace_id = (body.trace_id or "").strip() or None
    session_id = (body.session_id or "").strip() or None
    turn_index = body.turn_index
    if trace_id is None:
        if session_id is None or turn_index is None:
            raise ApiError(422, "unprocessable", "Name the turn: traceId, or sessionId and turnIndex (both are in "
                           "the chat answer).")
        if isinstance(turn_index, bool) or not isinstance(turn_index, int) or turn_index < 0:
            raise ApiError(422, "unprocessable", f"turnIndex must be a whole number from 0, got {turn_index!r}.")
    store = _store(svc)
    if not principal.everything:
        turn = await run_in_threadpool(store.get, trace_id=trace_id, session_id=session_id, turn_index=turn_index)
        if not _visible(svc, principal, turn, Role.READER):
            raise TurnNotFound(TurnStore._missing(trace_id, session_id, turn_index))  # as a turn that is not there
    record = await run_in_threadpool(store.rate, rating, body.comment, trace_id=trace_id, session_id=session_id,
                                     turn_index=turn_index)  # TurnNotFound: 404 (a NotFound)
    await run_in_threadpool(audit.record, svc, principal, "feedback.rate", ",".join(record.knowledge_bases),
                            record.trace_id or f"{record.session_id}#{record.turn_index}",
                            rating="up" if rating > 0 else "down")
    return Envelope[dict[str, Any]](data=camel_turn(record.to_dict()))


@router.get("/feedback", response_model=Envelope[list[dict[str, Any]]], summary="Recorded chat turns, newest first")
async def turns(svc: ServiceDep, principal: Annotated[Principal, Depends(Needs(Role.EDITOR, kb_in_query))],
                rating: Annotated[str | None, Query(description='"up", "down", or "rated" (either).')] = None,
                kb: Annotated[str | None, Query(description="Only turns that searched this knowledge base.")] = None,
                since: Annotated[str | None, Query(description="From this date or time (UTC, ISO 8601).")] = None,
                until: Annotated[str | None, Query(description="Up to this date (inclusive) or time.")] = None,
                limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
                user: Annotated[str | None, Query(description='Only turns this person asked (a user\'s name, "local" '
                                                  'for the one-person setup, cli:<OS user> for `chat`).')] = None,
                ) -> Envelope[list[dict[str, Any]]]:
    """What `python -m rag_core feedback list --json` prints, with the same filters: the turns on knowledge bases
    where you are an editor (the questions people asked there)."""
    rated = rating == "rated"
    value = None if rating in (None, "", "rated") else parse_rating(rating)
    if rating not in (None, "", "rated") and value is None:
        raise ApiError(422, "unprocessable", f'rating must be "up", "down" or "rated", got {rating!r}.')
    try:  # a date that is not one is refused, never read as "no turns"
        since, until = parse_when(since, "since"), parse_when(until, "until")
    except TurnQueryError as exc:
        raise ApiError(422, "unprocessable", str(exc)) from None
    found = await run_in_threadpool(_store(svc).find, rating=value, rated=rated, kb=kb, since=since, until=until,
                                    limit=limit, user=user)
    shown = [r for r in found if principal.everything or _visible(svc, principal, r, Role.EDITOR)]
    return Envelope[list[dict[str, Any]]](data=[camel_turn(r.to_dict()) for r in shown])


def _visible(svc: Any, principal: Principal, turn: TurnRecord, role: Role) -> bool:
    """Whether `principal` holds `role` on a knowledge base `turn` searched (the default one if it names none)."""
    return any(principal.can(kb, role) for kb in turn.knowledge_bases or (svc.workbench.settings.kb_name,))


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def camel_turn(turn: dict[str, Any]) -> dict[str, Any]:
    """A recorded turn in the /api family's style (SuperBizAgent's: `traceId`, `sessionId`, `turnIndex`), as its
    requests name them: its fields and its lookups' fields; what they hold (a lookup's params, timings) as it is."""
    out = {_camel(k): v for k, v in turn.items()}
    out["lookups"] = [{_camel(k): v for k, v in lookup.items()} for lookup in turn.get("lookups") or []]
    return out
