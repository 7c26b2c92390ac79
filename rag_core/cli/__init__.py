"""`python -m rag_core ...`: ingest, chunk, docs, delete, search, explain, reindex, rebuild, config (and chat, eval).

Global options come before the command: `--data-dir` (or RAG_DATA_DIR) isolates a run, `--config`
names a rag.toml, `--set key=value` overrides any setting, `--server URL` (or RAG_SERVER) runs the commands that
work remotely against a server's HTTP API (`remote`). `--json` prints machine-readable output on
stdout; progress bars go to stderr. Errors meant for people exit with status 2 and one clear line.

One module per command group (documents, search, reindex, config, kb, chat, evaluation, serve, host, users,
audit), each with its `register(subparsers)` and `cmd_*` functions; `parser` puts them together, `output` holds
what they print (JSON, tables, progress bars, exit statuses), `options` the options they share; `audit` also
holds how the changing commands record who did what.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import replace

from ..config import env_keys, load_settings
from ..errors import RagError
from .options import check_text_arguments, parse_sets
from .output import EXIT_ERROR, EXIT_OUTPUT_CLOSED
from .parser import build_parser

__all__ = ["build_parser", "main"]


def _output_closed() -> int:
    """The reader of stdout went away (`... --json | head`): stop quietly, like other Unix tools.
    Whatever Python still holds for stdout goes to /dev/null, so its flush at exit cannot complain."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_OUTPUT_CLOSED


def _flushed(code: int) -> int:
    sys.stdout.flush()  # a closed pipe shows here, where it is handled, not in Python's flush at exit
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        check_text_arguments(args)
        server = args.server or os.environ.get("RAG_SERVER")
        if server:  # the server's HTTP API instead of the local data folder (cli/remote.py)
            from .remote import run

            return _flushed(run(args, server))
        overrides = parse_sets(args.set)
        args.asked = sorted(overrides)
        settings = load_settings(args.data_dir, args.config, overrides=overrides).for_kb(args.kb)
        settings = replace(settings, per_command=frozenset(overrides) | frozenset(env_keys(os.environ)))
        return _flushed(args.func(args, settings))
    except RagError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return _output_closed()
    except Exception as exc:  # noqa: BLE001 - a bug or an unexpected service failure
        if args.debug:
            raise
        print(f"error: unexpected failure ({type(exc).__name__}: {str(exc)[:300]}). "
              "Run again with --debug for the traceback.", file=sys.stderr)
        return EXIT_ERROR
