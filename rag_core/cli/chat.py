"""`python -m rag_core chat "question"`: streams the answer on stdout, tool calls and notices on stderr.

Without a question it reads questions from stdin, one per line, keeping the conversation history
(chat.history-pairs). Each turn is one trace and is recorded (rag_core.feedback) as asked by `cli:<OS user>` (as the
audit log names this command's person); stderr gives its trace id, by which `feedback rate` rates it. `--json` prints
every event as one JSON line instead (the full lookup result included), `--offline` answers extractively without a
chat model.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import TYPE_CHECKING, Any, TextIO

from ..agent.events import ContentEvent, DoneEvent, ErrorEvent, Event, NoticeEvent, ToolCallEvent, ToolResultEvent
from ..agent.session import Session
from ..config import Settings
from ..text import text_problem
from .audit import who
from .output import EXIT_ERROR, json_line

if TYPE_CHECKING:
    from ..bootstrap import Workbench


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("chat", help="ask the agent: streams the answer and shows its tool calls")
    p.add_argument("question", nargs="*", help="the question; omit it to chat interactively (history is kept)")
    p.add_argument("--offline", action="store_true", help="answer extractively from the knowledge base, no model")
    p.add_argument("--json", action="store_true", help="print every event as one JSON line")
    p.set_defaults(func=cmd_chat)


def cmd_chat(args: argparse.Namespace, settings: Settings, workbench: Workbench | None = None) -> int:
    """`workbench`: an already open one (tests, or a caller that holds the Milvus Lite file); else built here."""
    from ..bootstrap import build_agent, build_workbench

    if args.offline:
        settings = settings.with_overrides({"chat.provider": "offline"}, "--offline")
    own = workbench is None
    workbench = build_workbench(settings) if workbench is None else dataclasses.replace(workbench, settings=settings)
    try:
        agent = build_agent(workbench)
        question = " ".join(args.question).strip()
        if not args.json:
            print(f"[{agent.describe()}]", file=sys.stderr)
        if question:
            return 0 if render_turn(agent.run(question, user=who()), json_lines=args.json) else EXIT_ERROR
        session = Session()
        failed = False
        for number, line in enumerate(sys.stdin if not sys.stdin.isatty() else _prompt(), start=1):
            line = line.strip()
            if line.lower() in ("exit", "quit", ":q"):
                break
            problem = text_problem(line)
            if problem is not None:  # stdin keeps bytes that are not UTF-8 as surrogates (rag_core.text)
                print(f"error: the question on line {number}: {problem}; send it as UTF-8 text.", file=sys.stderr)
                failed = True
            elif line:
                failed |= not render_turn(agent.run(line, session, user=who()), json_lines=args.json)
        return EXIT_ERROR if failed else 0  # a script piping questions learns that a turn failed
    finally:
        if own:
            workbench.close()


def _prompt():  # noqa: ANN202 - an iterator of typed lines
    while True:
        try:
            yield input("you> ")
        except EOFError:
            print(file=sys.stderr)
            return


def render_turn(events: Any, *, json_lines: bool = False, out: TextIO | None = None,
                err: TextIO | None = None) -> bool:
    """Print one turn's events; True when it ended with `done`, False with `error`."""
    out = out or sys.stdout
    err = err or sys.stderr
    at_line_start = True
    ok = False
    for event in events:
        if json_lines:
            out.write(json_line(event.to_dict()) + "\n")
            out.flush()
            ok = ok or isinstance(event, DoneEvent)
            continue
        if isinstance(event, ContentEvent):
            out.write(event.text)
            out.flush()
            at_line_start = event.text.endswith("\n")
            continue
        if not at_line_start:
            out.write("\n")
            out.flush()
            at_line_start = True
        _render_side(event, err)
        ok = ok or isinstance(event, DoneEvent)
    return ok


def _render_side(event: Event, err: TextIO) -> None:
    if isinstance(event, ToolCallEvent):
        shown = (", ".join(f"{k}={v!r}" for k, v in event.arguments.items()) if event.arguments is not None
                 else f"<not JSON: {event.raw_arguments[:80]!r}>")
        print(f"→ {event.name}({shown})", file=err)
    elif isinstance(event, ToolResultEvent):
        if not event.ok:
            print(f"← {event.name}: {event.error}", file=err)
        elif event.lookup is not None:
            keys = ", ".join(event.evidence_keys) or "no results"
            print(f"← {event.name}: {len(event.evidence_keys)} result(s): {keys}", file=err)
        else:
            print(f"← {event.name}: {_short(event.result)}", file=err)
    elif isinstance(event, NoticeEvent):
        print(f"! {event.message}", file=err)
    elif isinstance(event, DoneEvent):
        if event.citations:
            print(f"cited: {', '.join(event.citations)}", file=err)
        if event.unverified_citations:
            print(f"warning: cited but not returned by any tool this turn: {', '.join(event.unverified_citations)}",
                  file=err)
        if event.trace_id and event.turn_index >= 0:  # recorded: rateable, and findable in a trace viewer
            print(f"trace: {event.trace_id} (rate it: python -m rag_core feedback rate {event.trace_id} up|down)",
                  file=err)
    elif isinstance(event, ErrorEvent):
        print(f"error: {event.message}", file=err)


def _short(value: Any, limit: int = 160) -> str:
    text = json_line(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
