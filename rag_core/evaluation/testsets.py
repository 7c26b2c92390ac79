"""Test sets: labelled items (generated from a knowledge base, or written by hand), their review, and the
named sets kept under the data folder.

One line per item, in the simple format `eval` reads (`query`, `relevant` doc_ids, `answer`) plus what a
generated set says about each item (`datasets.ITEM_FIELDS`):

    {"id": "g001", "query": "...", "relevant": ["runbooks/cpu_high.md"], "answer": "a verbatim quote",
     "source": "runbooks/cpu_high.md#chunk-2", "lang": "en", "generator": "model", "kind": "question",
     "should_answer": true, "review": "unreviewed"}

`source` is the evidence key of the chunk the item was made from (None for an item no chunk answers);
`kind` is how it was made ("question": a model's question on the chunk; offline questions from "title": the
chunk's heading path, "sentence": the form of the sentence it quotes, "terms": its distinctive terms;
"unanswerable": a model's question no chunk answers; "follow_up": a question that only makes sense after the
earlier turn(s) in its `history`, `[{"role": "user", "content": "the first question"}]`, which name its topic;
"pronoun", "ellipsis", "switch": a hand-written conversation's last question, given as `turns` or `query` and
`history`, see datasets);
`review` is "unreviewed", "accepted",
"edited" (the person changed the query or the answer) or "dropped" (kept in the file, left out of runs).

Named sets are kept by a `ports.TestSetStore` (`bootstrap.build_test_sets`): by default `FolderTestSets`, in
`<data-dir>/eval/testsets/NAME.jsonl`, each with `NAME.meta.json` beside it (how it was made: generator, model,
prompt version, seed, rejections, timing), both written aside and renamed, so a set on disk is always complete: a
failed save leaves the previous one as it was; with database.url set, `testsets_sql.SqlTestSets`, one row a set.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..config import Settings
from ..errors import EvaluationError
from ..files import write_atomic
from ..ports import ChunkStore
from ..records import ConversationTurn
from .datasets import (
    ITEM_FIELDS,
    SAMPLE_KB,
    SAMPLE_SETS,
    EvalSet,
    _json_objects,
    bundled_sets,
    conversation_question,
    load_beir,
    load_user_set,
    should_answer_value,
)

REVIEW_STATES = ("unreviewed", "accepted", "edited", "dropped")
KINDS = ("question", "title", "sentence", "terms", "unanswerable", "follow_up", "pronoun", "ellipsis", "switch", "")
GENERATORS = ("model", "offline", "")  # "": written by hand
META_SUFFIX = ".meta.json"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$")


@dataclass(frozen=True)
class TestItem:
    """One labelled question. `answers` are verbatim quotes of the source chunk (one for a generated item;
    a hand-written line may give several, any of which counts). `history`: the turns asked before it, for a
    follow-up (kind "follow_up"); empty for a question that stands alone."""

    __test__ = False  # not a pytest class, whatever its name

    id: str
    query: str
    relevant: tuple[str, ...]
    answers: tuple[str, ...] = ()
    source: str | None = None
    lang: str = ""
    generator: str = ""
    kind: str = ""
    should_answer: bool = True
    review: str = "unreviewed"
    history: tuple[ConversationTurn, ...] = ()

    @property
    def answer(self) -> str | None:
        return self.answers[0] if self.answers else None

    @property
    def active(self) -> bool:
        """Whether runs use it (a dropped item stays in the file, for the record, but is not asked)."""
        return self.review != "dropped"

    def to_dict(self) -> dict[str, Any]:
        answer: str | list[str] | None = (self.answers[0] if len(self.answers) == 1 else list(self.answers)
                                          if self.answers else None)
        row: dict[str, Any] = {"id": self.id, "query": self.query, "relevant": list(self.relevant), "answer": answer,
                               "source": self.source, "lang": self.lang, "generator": self.generator,
                               "kind": self.kind, "should_answer": self.should_answer, "review": self.review}
        if self.history:  # only a follow-up has one: other lines stay the simple format
            row["history"] = [turn.to_dict() for turn in self.history]
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any], where: str, default_id: str) -> TestItem:
        """A line of a test set (or of a hand-written simple-format set). Errors name the line and the field."""
        unknown = set(row) - {"id", "query", "turns", "relevant", "answer", *ITEM_FIELDS}
        if unknown:
            raise EvaluationError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; use query (or turns), "
                                  f"relevant, answer and optionally id, {', '.join(ITEM_FIELDS)}.")
        query, history = conversation_question(row, where)
        relevant = _strings(row.get("relevant"), where, "relevant")
        answers = _strings(row.get("answer"), where, "answer")
        should_answer = should_answer_value(row.get("should_answer"), where)
        if should_answer and not relevant:
            raise EvaluationError(f"{where}: `relevant` is missing or empty: list the doc ids that answer the query, "
                                  "or mark the line \"should_answer\": false.")
        texts = {}
        fields_allowed = (("lang", None), ("generator", GENERATORS), ("kind", KINDS), ("review", ("", *REVIEW_STATES)))
        for name, allowed in fields_allowed:
            value = row.get(name)
            value = "" if value is None else value
            if not isinstance(value, str) or (allowed is not None and value not in allowed):
                choices = ", ".join(a for a in (allowed or ()) if a)
                raise EvaluationError(f"{where}: `{name}` {json.dumps(value)[:40]} is not "
                                      f"{'one of ' + choices if choices else 'a string'}.")
            texts[name] = value
        source = row.get("source")
        if source is not None and not isinstance(source, str):
            raise EvaluationError(f"{where}: `source` must be an evidence key (a string) or null.")
        return cls(id=str(row.get("id") or "").strip() or default_id, query=query.strip(), relevant=tuple(relevant),
                   answers=tuple(answers), source=source or None, lang=texts["lang"], generator=texts["generator"],
                   kind=texts["kind"], should_answer=should_answer, review=texts["review"] or "unreviewed",
                   history=history)


@dataclass(frozen=True)
class TestSet:
    """Items and how they were made (`meta`: see `generate.GenerationResult.meta`; {} for a hand-written set)."""

    __test__ = False

    name: str
    items: tuple[TestItem, ...]
    meta: Mapping[str, Any] = field(default_factory=dict)
    path: Path | None = None

    @property
    def active(self) -> tuple[TestItem, ...]:
        return tuple(i for i in self.items if i.active)

    def counts(self) -> dict[str, int]:
        """Items by review state, and how many should not be answerable (for a list or a page header)."""
        counts = {state: 0 for state in REVIEW_STATES}
        for item in self.items:
            counts[item.review] += 1
        counts["should_not_answer"] = sum(1 for i in self.active if not i.should_answer)
        return counts


def _strings(value: Any, where: str, what: str) -> list[str]:
    if value is None or value == "":
        return []
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise EvaluationError(f"{where}: `{what}` must be a list of strings (or one string), "
                              f"got {json.dumps(value, ensure_ascii=False)[:60]}.")
    return [v.strip() for v in items if v.strip()]


# ------------------------------------------------------------------------------------------ files
def parse_items(text: str, label: str) -> tuple[TestItem, ...]:
    """The items of a test set's JSONL text; ids must be unique. Errors name the line."""
    items = tuple(TestItem.from_row(row, f"{label}, line {n}", f"q{n}") for n, row in _json_objects(text.splitlines(),
                                                                                                     label))
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise EvaluationError(f"{label}: item id {item.id!r} appears twice.")
        seen.add(item.id)
    return items


def meta_path(path: Path) -> Path:
    """The sidecar of a set's file: `x.jsonl` -> `x.meta.json`."""
    return path.with_name(path.stem + META_SUFFIX)


def read_test_set(path: str | os.PathLike[str], name: str | None = None) -> TestSet:
    """A test set from its JSONL file (and its sidecar, when there is one)."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        raise EvaluationError(f"Test set {path} does not exist.") from None
    except IsADirectoryError:
        raise EvaluationError(f"Test set {path} is a folder; give a .jsonl file.") from None
    except UnicodeDecodeError as exc:
        raise EvaluationError(f"{path}: byte 0x{exc.object[exc.start]:02X} is not UTF-8; save the file as "
                              "UTF-8.") from None
    items = parse_items(text, str(path))
    if not items:
        raise EvaluationError(f"{path} contains no items.")
    meta: dict[str, Any] = {}
    sidecar = meta_path(path)
    if sidecar.is_file():
        try:
            loaded = json.loads(sidecar.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise EvaluationError(f"{sidecar} is damaged ({exc}); delete it to use the items without it.") from None
        meta = loaded if isinstance(loaded, dict) else {}
    return TestSet(name or path.stem, items, meta, path)


def items_jsonl(items: Iterable[TestItem]) -> str:
    return "".join(json.dumps(i.to_dict(), ensure_ascii=False) + "\n" for i in items)


def write_test_set(path: str | os.PathLike[str], items: Sequence[TestItem], meta: Mapping[str, Any] | None = None
                   ) -> Path:
    """Write the items (and `meta`, beside them) to `path`. The sidecar goes first, so a set whose items are on
    disk always has its own description; each file is complete or not there."""
    path = Path(path)
    if not items:
        raise EvaluationError(f"Nothing to write to {path}: the test set has no items.")
    if meta is not None:
        write_atomic(meta_path(path), json.dumps(dict(meta), ensure_ascii=False, indent=1) + "\n")
    write_atomic(path, items_jsonl(items))
    return path


# ------------------------------------------------------------------------------------------ named sets
def saved_sets_dir(settings: Settings) -> Path:
    """Where named test sets live: next to the saved runs (`results.runs_dir`)."""
    return settings.data_dir / "eval" / "testsets"


def is_set_name(name: str) -> bool:
    """Whether a saved set may have this name (`eval NAME` tells a set's name from a file's path with it)."""
    return bool(_NAME.match(name)) and not name.endswith(".meta") and name not in (".", "..")


def check_name(name: str) -> str:
    name = (name or "").strip()
    if not is_set_name(name):
        raise EvaluationError(f"Test set name {name!r}: use letters, digits, '_', '-' and '.', starting with a letter "
                              "or digit, at most 80 characters.")
    return name


@dataclass(frozen=True)
class TestSetInfo:
    """A named set as listed (without reading its items twice)."""

    __test__ = False

    name: str
    path: Path | None  # None: the set is in a database
    items: int
    generator: str
    modified: str  # ISO-8601 UTC of the file (of the save, in a database)


@runtime_checkable
class TestSetStore(Protocol):
    """Named test sets (rag_core.evaluation.testsets): files in the data folder by default, a table of the shared
    database when database.url is set (`bootstrap.build_test_sets`). A name is checked (`testsets.check_name`) before
    anything is read or written; a save replaces the whole set at once, a reader sees the old set or the new one.
    Raises `EvaluationError` for a bad name or an empty set, `testsets.UnknownTestSet` for a name not saved,
    `StoreError` when the database cannot be reached. (Kept here beside its records, not in rag_core.ports,
    which this package's modules import.)"""

    @property
    def where(self) -> str:
        """The folder, or the database without credentials, for messages."""
        ...

    def list_sets(self) -> list[TestSetInfo]:
        """The saved sets, sorted by name (a file that does not read as a set is left out)."""
        ...

    def load(self, name: str) -> TestSet:
        """The set saved as `name`; UnknownTestSet, listing the saved ones, when there is none."""
        ...

    def save(self, name: str, items: Sequence[TestItem], meta: Mapping[str, Any] | None = None) -> str:
        """Saves (or replaces) the set `name`; `meta` None keeps the description it has. Where it went, for messages."""
        ...

    def close(self) -> None: ...


class UnknownTestSet(EvaluationError):
    """No saved set of that name (its message lists the ones there are)."""


def set_info(name: str, items: Sequence[TestItem], modified: str, path: Path | None = None) -> TestSetInfo:
    """A set as listed: its item count and generators ("manual" when written by hand)."""
    generators = sorted({i.generator for i in items} - {""})
    return TestSetInfo(name, path, len(items), ",".join(generators) or "manual", modified)


def unknown_set(name: str, known: Iterable[str]) -> UnknownTestSet:
    return UnknownTestSet(f"No test set named {name!r} (saved sets: {', '.join(known) or 'none yet'}).")


def list_test_sets(root: Path) -> list[TestSetInfo]:
    """The named sets under `root`, sorted by name. A file that does not read as a test set is left out of the
    list (loading it by name says why)."""
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.glob("*.jsonl")):
        try:
            test_set = read_test_set(path)
        except EvaluationError:
            continue
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds")
        found.append(set_info(path.stem, test_set.items, modified, path))
    return found


def load_test_set(root: Path, name: str) -> TestSet:
    """The named set `name` under `root`; an unknown name lists the ones there are."""
    path = root / f"{check_name(name)}.jsonl"
    if not path.is_file():
        raise unknown_set(name, (s.name for s in list_test_sets(root)))
    return read_test_set(path, name)


def save_test_set(root: Path, name: str, items: Sequence[TestItem], meta: Mapping[str, Any] | None = None) -> Path:
    """Save (or replace) the named set `name` under `root`; `meta` None keeps the sidecar it has."""
    return write_test_set(root / f"{check_name(name)}.jsonl", items, meta)


class FolderTestSets:
    """The TestSetStore of the embedded default: the files above, in one folder (`saved_sets_dir`)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def where(self) -> str:
        return str(self.root)

    def list_sets(self) -> list[TestSetInfo]:
        return list_test_sets(self.root)

    def load(self, name: str) -> TestSet:
        return load_test_set(self.root, name)

    def save(self, name: str, items: Sequence[TestItem], meta: Mapping[str, Any] | None = None) -> str:
        return str(save_test_set(self.root, name, items, meta))

    def close(self) -> None:
        pass


# ------------------------------------------------------------------------------------------ review
def review_item(items: Sequence[TestItem], item_id: str, *, state: str | None = None, query: str | None = None,
                answer: str | None = None, should_answer: bool | None = None) -> tuple[TestItem, ...]:
    """The items with one changed: a review `state`, a new `query` or `answer` (the item becomes "edited"), or
    marked (not) answerable. An item marked `should_answer=False` keeps its relevant documents and answer, for
    the record; runs of retrieval leave it out and answer scoring expects a refusal."""
    if state is not None and state not in REVIEW_STATES:
        raise EvaluationError(f"Review state {state!r}: use one of {', '.join(REVIEW_STATES)}.")
    out, found = [], False
    for item in items:
        if item.id != item_id:
            out.append(item)
            continue
        found = True
        changes: dict[str, Any] = {}
        if query is not None:
            if not query.strip():
                raise EvaluationError(f"Item {item_id}: the question cannot be empty.")
            changes["query"] = query.strip()
        if answer is not None:
            changes["answers"] = (answer.strip(),) if answer.strip() else ()
        if should_answer is not None:
            if should_answer and not item.relevant:
                raise EvaluationError(f"Item {item_id} names no relevant document, so it cannot be marked answerable.")
            changes["should_answer"] = should_answer
        edited = any(changes.get(k, getattr(item, k)) != getattr(item, k) for k in ("query", "answers"))
        changes["review"] = state or ("edited" if edited else item.review)
        out.append(replace(item, **changes))
    if not found:
        raise EvaluationError(f"No item {item_id!r} in this test set.")
    return tuple(out)


def source_chunk(store: ChunkStore, item: TestItem) -> str | None:
    """The content of the chunk an item was made from (its `source` evidence key, `doc_id#chunk-N`), as the
    knowledge base holds it now; None when the item has none or the chunk is gone (re-chunked, deleted)."""
    doc_id, sep, index = (item.source or "").rpartition("#chunk-")
    if not sep or not index.isdigit():
        return None
    return next((c.content for c in store.get_chunks(doc_id) if c.chunk_index == int(index)), None)


def load_set(spec: str, *, split: str | None = None, limit: int | None = None, sample: int | None = None,
             seed: int | None = None, corpus_sample: int | None = None, corpus: str | os.PathLike[str] | None = None,
             live: bool = False, env: Mapping[str, str] | None = None,
             saved: TestSetStore | Path | None = None) -> EvalSet:
    """A bundled set name, a BEIR folder, a JSONL/CSV file, or the name of a test set saved in `saved`
    (`bootstrap.build_test_sets`; a folder of saved sets is read as `testsets.FolderTestSets`) -> EvalSet.

    The sample sets' corpus is examples/kb unless `corpus` is given; `live` evaluates a simple-format set
    against the configured knowledge base instead of indexing a corpus. A saved set is made from a knowledge
    base, so without `corpus` it is evaluated live."""
    store = FolderTestSets(saved) if isinstance(saved, Path) else saved
    sets = bundled_sets(env)
    path = sets.get(spec) or Path(spec)
    if store is not None and spec not in sets and not path.exists() and is_set_name(spec):
        try:
            named = store.load(spec)
        except UnknownTestSet:
            pass
        else:
            if split:
                raise EvaluationError("--split applies to BEIR-layout sets only.")
            source = named.path if named.path is not None else items_jsonl(named.items).encode()
            eval_set = load_user_set(source, name=f"{spec}.jsonl", corpus=None if live else corpus, limit=limit,
                                     sample=sample, seed=seed)
            return EvalSet(spec, eval_set.queries, eval_set.documents, eval_set.info)
    if path.is_dir():
        if live or corpus:
            raise EvaluationError("A BEIR-layout set brings its own corpus: --live and --corpus apply to "
                                  "JSONL/CSV sets only.")
        return load_beir(path, split=split, limit=limit, sample=sample, seed=seed, corpus_sample=corpus_sample,
                         name=spec if spec in sets else None)
    if not path.exists():
        names = ", ".join(sets) or "(none found)"
        own = [s.name for s in store.list_sets()] if store is not None else []
        raise EvaluationError(f"No evaluation set {spec!r}: give a bundled set ({names}), a saved test set ("
                              f"{', '.join(own) or 'none yet: eval generate --name NAME'}), a BEIR folder or a "
                              ".jsonl/.csv file.")
    if split:
        raise EvaluationError("--split applies to BEIR-layout sets only.")
    if live:
        corpus_arg = None
    else:
        bundled = {p.resolve() for p in SAMPLE_SETS.values()}
        corpus_arg = corpus or (SAMPLE_KB if path.resolve() in bundled else None)
        if corpus_arg is None:
            raise EvaluationError(f"{path}: say which documents to evaluate against: --corpus FOLDER "
                                  "(indexed into the isolated evaluation database) or --live (the knowledge base).")
    eval_set = load_user_set(path, corpus=corpus_arg, limit=limit, sample=sample, seed=seed)
    return EvalSet(spec if spec in sets else eval_set.name, eval_set.queries, eval_set.documents, eval_set.info)
