"""Text from outside is checked where it enters, once: `check_text` / `check_texts` name the field and the
character that is wrong, in one line (`InvalidText`, a 400 over HTTP, `error: ...` and status 2 on the CLI).

What they refuse is a string Python holds but no UTF-8 text can: a lone UTF-16 surrogate (U+D800..U+DFFF).
A JSON `"\\ud800"` escape without its pair makes one, and Python makes one of every byte that is not UTF-8 in
a command-line argument, a file name, or standard input in the C locale (surrogateescape: byte 0xFF becomes
U+DCFF). Such a string passes every other check and fails only where something encodes it (the embedder's
tokenizer, the JSON of an answer, an SSE frame), as a traceback and an "unexpected error".

The edges: the HTTP service's JSON bodies (service.models.Inbound; query strings, form fields, paths and
multipart file names are decoded with replacement characters, so they cannot carry one), the CLI's text
arguments and the questions `chat` reads on stdin (cli.options.TEXT_ARGUMENTS, cli.chat), JSON-lines query and
evaluation files (evaluation.datasets), and the arguments a chat model sends to a tool (agent.tools).
File names have their own rule (doc_ids), which refuses them too.

`fold` is what the BM25 channel reads instead of the text: Traditional Chinese folded to Simplified (OpenCC
`t2s`), so a document and a question in different scripts share their words (store.milvus.schema's `bm25_text`).
"""

from __future__ import annotations

import threading
from typing import Any

from .errors import InvalidText

_fold_lock = threading.Lock()
_folder: Any = None


def fold(text: str) -> str:
    """`text` with Traditional Chinese characters and phrases as Simplified (OpenCC `t2s`, its dictionaries inside
    the wheel); every other character unchanged, so the result has the same words for BM25. The converter is made
    once (about 1 ms) and used under a lock: OpenCC releases the interpreter lock while it converts, and does not
    say that one converter may be used by two threads at once (a query takes about 3 µs)."""
    global _folder
    with _fold_lock:
        if _folder is None:
            import opencc

            _folder = opencc.OpenCC("t2s")
        return str(_folder.convert(text))


def display(raw: str, limit: int = 120) -> str:
    """`raw` printable on one line: control characters and surrogates as `\\x..` / `\\u....` escapes (a byte
    that was not UTF-8, kept by surrogateescape, as the byte: `\\xff`)."""
    shown = "".join(_shown(c) for c in raw)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _shown(c: str) -> str:
    code = ord(c)
    if c.isprintable() or c == " ":
        return c
    if code < 256:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def text_problem(text: str) -> str | None:
    """What makes `text` unusable as text (where, which character), or None when it is fine."""
    try:
        text.encode("utf-8")
        return None
    except UnicodeEncodeError as exc:  # only surrogates fail: every other code point encodes
        at = exc.start
    code = ord(text[at])
    near = display(text[max(0, at - 20):at + 1], limit=60)
    if 0xDC80 <= code <= 0xDCFF:  # how Python keeps a byte that is not UTF-8 (surrogateescape)
        what = f"the byte 0x{code - 0xDC00:02X}, which is not UTF-8"
    else:
        what = f"a lone UTF-16 surrogate (U+{code:04X}: a \\u escape without its pair, not a character)"
    return f"character {at + 1} is {what}, near '{near}'"


def check_text(text: str, what: str) -> str:
    """`text` unchanged, or InvalidText naming `what` ("Question", "the query argument", ...)."""
    problem = text_problem(text)
    if problem is not None:
        raise InvalidText(f"{what}: {problem}; send it as UTF-8 text.")
    return text


def check_texts(value: Any, what: str = "") -> Any:
    """`check_text` on every string in a JSON-like value (dict keys and values, lists), naming each by its
    path: `settings.chunk.max-size`, `items[2]`. Returns `value` unchanged."""
    if isinstance(value, str):
        check_text(value, what or "the text")
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and text_problem(key) is not None:
                check_text(key, f"{what + ': ' if what else ''}the field name '{display(key, 60)}'")
            check_texts(item, f"{what}.{key}" if what else str(key))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_texts(item, f"{what}[{i}]" if what else f"item {i + 1}")
    return value
