"""Labelled evaluation sets: the BEIR layout and a simple format a person can write by hand.

BEIR layout (a folder): `corpus.jsonl` (`_id`, `title`, `text`), `queries.jsonl` (`_id`, `text`,
optional `metadata.answers` = [{doc_id, start, text}] and `metadata.spans` = [{doc_id, start, end}]),
`qrels/<split>.tsv` (`query-id`, `corpus-id`, `score`, with a header line). Relevance is `score > 0`;
the score is the graded gain used by nDCG.

Span labels: a gold *span* is a character range of a document that holds the evidence, with no answer
text (sets labelled at chunk or passage level). It is given in `metadata.spans`, or as an entry of
`metadata.answers` with `start` and `end` but no `text`. Spans are scored at chunk level (see
`metrics.chunk_overlaps_span`). A label that cannot be used (no text and no span, a span outside its
document) is dropped with a warning, never silently.

A corpus record becomes a `Document` with `doc_id = _id` and text `title + "\\n\\n" + text`, so the title
is indexed like a heading. When the text already starts with the title (COVID-QA papers, most CMRC
passages) it is not repeated. Answer offsets in `metadata.answers` are offsets into the record's `text`
(checked for every answer of CMRC 2018 and COVID-QA), so they are shifted by the length of whatever was
put in front of it; `Answer.start` is always an offset into `Document.text`.

Simple format (JSONL or CSV), one query per line/row:

    {"query": "...", "relevant": ["runbooks/cpu_high.md"], "answer": "an exact substring"}

`relevant` is a list of doc ids (in CSV: `;`-separated); `answer` is optional (a string or a list of
strings) and has no offset: a chunk contains it when it belongs to a relevant document and its text
contains the answer verbatim. `id` is optional (default `q<line>`). The fields of a generated or reviewed
test set (`ITEM_FIELDS`, see `testsets`) are accepted too, so such a set runs as it is: a line with
`"should_answer": false` (no chunk answers it: `relevant` may be empty) or `"review": "dropped"` is left out
of a retrieval run, counted in the set's `info["excluded"]`.

Conversations (JSONL only): a line may label the last question of a conversation, given either as `turns`, the
whole conversation whose last turn is the user's question the labels are for (no `query` then), or as `query` plus
`history`, the turns before it:

    {"turns": [{"role": "user", "content": "How do I free disk space?"},
               {"role": "assistant", "content": "Prune unused images ... [runbooks/disk_full.md#chunk-4]"},
               {"role": "user", "content": "Which command shows it?"}],
     "relevant": ["runbooks/disk_full.md"], "answer": "df -h -x tmpfs -x overlay"}
    {"query": "Which command shows it?", "history": [{"role": "user", "content": "How do I free disk space?"}], ...}

Both become an `EvalQuery` whose `text` is the last question and `history` the turns before it; a run searches
it as a lookup with that history, so the rewrite stage runs as in chat. Roles are user and assistant (assistant
turns are optional), every turn has text, and `turns` ends with the user's question. `examples/kb_conversations.jsonl`
(the bundled set `sample-conversations`) is one, over `examples/kb`.

Subsets: `sample=N` (with `seed`, default 0) takes a seeded random sample of N queries, kept in file
order, the same for the same set, N and seed; `limit=N` takes the first N in file order. Prefer the
sample: sets are often ordered by document (the first 150 queries of CMRC 2018 dev have 40 relevant
documents, a sample of 150 has 139), so the first N say little about the whole. Either run on a BEIR corpus indexes
a slice of it that follows the chosen queries: every document relevant to (or holding an answer or
span of) them, plus a deterministic sample of the others — the `corpus_sample` documents with the
smallest sha256(doc_id), by default max(100, 10 x N). A sliced corpus is easier than the whole one: the
slice and the query subset are recorded with the run (`corpus.sliced`, `corpus.documents`, `queries`)
so figures are never compared by mistake.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import EvaluationError, InvalidText
from ..records import ConversationTurn, Document
from ..text import check_texts

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_KB = REPO_ROOT / "examples" / "kb"
SAMPLE_QUERIES = REPO_ROOT / "examples" / "kb_queries.jsonl"
SAMPLE_NAME = "sample"
SAMPLE_CONVERSATIONS = REPO_ROOT / "examples" / "kb_conversations.jsonl"
SAMPLE_CONVERSATIONS_NAME = "sample-conversations"
EVAL_DIR_ENV = "RAG_EVAL_DIR"
# What a test set's line may carry besides query, relevant, answer and id (rag_core.evaluation.testsets).
ITEM_FIELDS = ("source", "lang", "generator", "kind", "should_answer", "review", "history")
ROLES = ("user", "assistant")
DEFAULT_SAMPLE_PER_QUERY = 10
MIN_DEFAULT_SAMPLE = 100
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Answer:
    """An answer span. `start` is an offset into `Document.text` of `doc_id`, or None (text only)."""

    text: str
    doc_id: str | None = None
    start: int | None = None

    @property
    def end(self) -> int | None:
        return None if self.start is None else self.start + len(self.text)


@dataclass(frozen=True)
class Span:
    """A gold evidence span: characters [start, end) of `Document.text` of `doc_id`."""

    doc_id: str
    start: int
    end: int


@dataclass(frozen=True)
class EvalQuery:
    query_id: str
    text: str
    relevant: Mapping[str, int]  # doc_id -> graded relevance (> 0)
    answers: tuple[Answer, ...] = ()
    spans: tuple[Span, ...] = ()
    history: tuple[ConversationTurn, ...] = ()  # the conversation before `text` (searched through the rewrite stage)


@dataclass(frozen=True)
class EvalSet:
    """Queries with their labels, and the corpus to index (None: evaluate an existing knowledge base)."""

    name: str
    queries: tuple[EvalQuery, ...]
    documents: tuple[Document, ...] | None
    info: Mapping[str, Any] = field(default_factory=dict)  # source, split, limit, corpus slice

    @property
    def has_answers(self) -> bool:
        return any(q.answers for q in self.queries)

    @property
    def has_spans(self) -> bool:
        return any(q.spans for q in self.queries)


# ------------------------------------------------------------------------------------------ helpers
def make_document(doc_id: str, text: str, extension: str = "txt") -> Document:
    data = text.encode("utf-8")
    return Document(doc_id=doc_id, text=text, file_name=doc_id.rsplit("/", 1)[-1], extension=extension,
                    size_bytes=len(data), content_hash=hashlib.sha256(data).hexdigest())


def beir_document(record: Mapping[str, Any]) -> tuple[Document, int]:
    """A corpus record -> (Document, shift): `shift` is added to answer offsets into the record's text."""
    title = str(record.get("title") or "").strip()
    text = str(record.get("text") or "")
    if title and not text.startswith(title):
        prefix = title + "\n\n"
        return make_document(str(record["_id"]), prefix + text), len(prefix)
    return make_document(str(record["_id"]), text), 0


def _json_objects(lines: Iterable[str], label: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line; a clear error names the line that is not one."""
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise EvaluationError(f"{label}, line {line_no}: not valid JSON ({exc.msg}). "
                                  "Write one JSON object per line.") from None
        if not isinstance(value, dict):
            raise EvaluationError(f"{label}, line {line_no}: expected a JSON object, got {type(value).__name__}.")
        try:  # a "\ud800" escape without its pair: refused here, not deep in the embedder (rag_core.text)
            check_texts(value)
        except InvalidText as exc:
            raise EvaluationError(f"{label}, line {line_no}: {exc}") from None
        yield line_no, value


def _jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        fh = path.open(encoding="utf-8")
    except FileNotFoundError:
        raise EvaluationError(f"{path} does not exist.") from None
    with fh:
        try:
            yield from _json_objects(fh, str(path))
        except UnicodeDecodeError as exc:
            raise EvaluationError(f"{path}: byte 0x{exc.object[exc.start]:02X} is not UTF-8; save the file as "
                                  "UTF-8.") from None


def sample_order(doc_id: str) -> str:
    """The deterministic order in which non-relevant documents are sampled into a corpus slice."""
    return hashlib.sha256(doc_id.encode("utf-8")).hexdigest()


def choose_queries(items: Sequence[Any], *, limit: int | None = None, sample: int | None = None,
                   seed: int | None = None) -> tuple[list[Any], dict[str, Any]]:
    """The queries to run and how they were chosen (recorded with the run): a seeded random sample of
    `sample` (kept in file order), the first `limit`, or all."""
    if limit is not None and sample is not None:
        raise EvaluationError("--limit and --sample exclude each other: --sample N takes a random N "
                              "(reproducible with --seed), --limit N the first N in file order.")
    if seed is not None and sample is None:
        raise EvaluationError("--seed applies to --sample only.")
    for name, value in (("--limit", limit), ("--sample", sample)):
        if value is not None and value < 1:
            raise EvaluationError(f"{name} must be at least 1 (got {value}).")
    total = len(items)
    if sample is not None:
        seed = DEFAULT_SEED if seed is None else seed
        picked = sorted(random.Random(seed).sample(range(total), min(sample, total)))
        return [items[i] for i in picked], {"rule": "sample", "sample": sample, "seed": seed, "chosen": len(picked),
                                            "of": total}
    if limit is not None:
        return list(items[:limit]), {"rule": "first", "limit": limit, "chosen": min(limit, total), "of": total}
    return list(items), {"rule": "all", "chosen": total, "of": total}


# ------------------------------------------------------------------------------------------ BEIR
def beir_splits(folder: Path) -> list[str]:
    qrels = Path(folder) / "qrels"
    return sorted(p.stem for p in qrels.glob("*.tsv")) if qrels.is_dir() else []


def default_split(folder: Path) -> str:
    splits = beir_splits(folder)
    if not splits:
        raise EvaluationError(f"{folder} has no qrels/<split>.tsv: it is not a BEIR-layout evaluation set.")
    for preferred in ("test", "dev"):
        if preferred in splits:
            return preferred
    return splits[0]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """query id -> {doc id: score > 0}, in file order."""
    if not path.is_file():
        raise EvaluationError(f"{path} does not exist.")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            parts = line.rstrip("\n").split("\t")
            if not line.strip() or (line_no == 1 and parts[0] == "query-id"):
                continue
            if len(parts) < 3:
                raise EvaluationError(f"{path}, line {line_no}: expected query-id<TAB>corpus-id<TAB>score.")
            try:
                score = int(float(parts[2]))
            except ValueError:
                raise EvaluationError(f"{path}, line {line_no}: score {parts[2]!r} is not a number.") from None
            if score > 0:
                qrels.setdefault(parts[0], {})[parts[1]] = score
    return qrels


def load_beir(folder: str | os.PathLike[str], *, split: str | None = None, limit: int | None = None,
              sample: int | None = None, seed: int | None = None, corpus_sample: int | None = None,
              name: str | None = None) -> EvalSet:
    """A BEIR-layout folder -> EvalSet (see the module docstring for subsets, spans and the corpus slice)."""
    folder = Path(folder)
    if not (folder / "corpus.jsonl").is_file():
        raise EvaluationError(f"{folder} has no corpus.jsonl: it is not a BEIR-layout evaluation set.")
    split = split or default_split(folder)
    if split not in beir_splits(folder):
        raise EvaluationError(f"{folder} has no split {split!r}; it has: {', '.join(beir_splits(folder))}.")
    qrels = read_qrels(folder / "qrels" / f"{split}.tsv")

    judged: list[tuple[str, str, Mapping[str, Any]]] = []
    skipped: list[str] = []  # judged queries without text (CMRC 2018's trial split has one): nothing to ask
    for _, rec in _jsonl(folder / "queries.jsonl"):
        qid = str(rec.get("_id", ""))
        if qid not in qrels:
            continue
        text = str(rec.get("text") or "").strip()
        if not text:
            skipped.append(qid)
            continue
        metadata = rec.get("metadata")
        judged.append((qid, text, metadata if isinstance(metadata, dict) else {}))
        if limit is not None and sample is None and len(judged) >= limit:
            break  # the first N: no need to read further
    if not judged:
        raise EvaluationError(f"{folder}: no query of queries.jsonl has judgements in qrels/{split}.tsv.")
    chosen, subset = choose_queries(judged, limit=limit, sample=sample, seed=seed)
    if limit is not None:
        subset["of"] = None  # reading stopped at the first N: the total is not known

    records: dict[str, dict[str, Any]] = {}
    for line_no, rec in _jsonl(folder / "corpus.jsonl"):
        if "_id" not in rec:
            raise EvaluationError(f"{folder / 'corpus.jsonl'}, line {line_no}: a record has no _id.")
        records[str(rec["_id"])] = rec

    labels = [(qid, text, _raw_labels(qid, metadata)) for qid, text, metadata in chosen]
    warnings = _unread_metadata([metadata for _, _, metadata in chosen])
    warnings += [w for _, _, (_, _, ws) in labels for w in ws]
    needed: set[str] = set()
    for qid, _, (golds, _spans, _) in labels:
        needed.update(qrels[qid])
        needed.update(str(a["doc_id"]) for a in golds if a.get("doc_id") is not None)
    missing = sorted(needed - records.keys())
    if missing:
        raise EvaluationError(f"{folder}: qrels or answers name documents missing from corpus.jsonl: "
                              f"{', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}.")
    needed.update(s["doc_id"] for _, _, (_, spans, _) in labels for s in spans if s["doc_id"] in records)
    n = len(chosen)
    if corpus_sample is None and subset["rule"] != "all":
        corpus_sample = max(MIN_DEFAULT_SAMPLE, DEFAULT_SAMPLE_PER_QUERY * n)
    sliced = corpus_sample is not None and len(needed) + corpus_sample < len(records)
    if sliced:
        others = sorted((d for d in records if d not in needed), key=sample_order)[:corpus_sample]
        keep = needed | set(others)
        ids = [d for d in records if d in keep]  # corpus order
    else:
        ids = list(records)
    documents, shifts = [], {}
    for doc_id in ids:
        doc, shift = beir_document(records[doc_id])
        documents.append(doc)
        shifts[doc_id] = shift
    texts = {d.doc_id: d.text for d in documents}

    queries = []
    for qid, text, (raw_answers, raw_spans, _) in labels:
        answers: list[Answer] = []
        for a in raw_answers:
            doc_id, answer_text = str(a["doc_id"]), str(a["text"])
            start = a.get("start")
            if isinstance(start, int) and not isinstance(start, bool) and start >= 0:
                start += shifts[doc_id]
                if texts[doc_id][start:start + len(answer_text)] != answer_text:
                    raise EvaluationError(f"{folder}: query {qid!r}: the answer {answer_text[:40]!r} is not at "
                                          f"offset {a['start']} of document {doc_id!r}.")
            else:
                start = None
            answers.append(Answer(answer_text, doc_id, start))
        spans: list[Span] = []
        for s in raw_spans:
            doc_id = s["doc_id"]
            if doc_id not in texts:
                warnings.append(f"query {qid}: span {s['start']}-{s['end']} names document {doc_id!r}, which is not "
                                "in corpus.jsonl: the span is ignored")
                continue
            start, end = s["start"] + shifts[doc_id], s["end"] + shifts[doc_id]
            if end > len(texts[doc_id]):
                warnings.append(f"query {qid}: span {s['start']}-{s['end']} ends after document {doc_id!r} "
                                f"({len(texts[doc_id]) - shifts[doc_id]} characters): the span is ignored")
                continue
            spans.append(Span(doc_id, start, end))
        queries.append(EvalQuery(qid, text, dict(qrels[qid]), tuple(answers), tuple(spans)))

    info = {"format": "beir", "source": str(folder), "split": split, "limit": limit, "queries": subset,
            "skipped_queries": skipped, "label_warnings": warnings,
            "titles_prepended": sum(1 for shift in shifts.values() if shift),
            "corpus": {"documents": len(documents), "total_documents": len(records), "sliced": sliced,
                       "sample": corpus_sample if sliced else None,
                       "rule": ("relevant, answer and span documents of the chosen queries, plus the corpus_sample "
                                "others with the smallest sha256(doc_id)") if sliced else "whole corpus"}}
    return EvalSet(name or folder.name, tuple(queries), tuple(documents), info)


LABEL_KEYS = ("answers", "spans")  # the metadata keys labels are read from (see the module docstring)


def _unread_metadata(metadatas: Sequence[Mapping[str, Any]]) -> list[str]:
    """One warning naming the structured metadata keys (lists and objects: labels, perhaps, under another name,
    such as `gold_spans`) that no label is read from, so that a set's spans are never dropped without a word.
    Scalars (`"split": "dev"`) are not labels and are not mentioned."""
    counts: dict[str, int] = {}
    for metadata in metadatas:
        for key, value in metadata.items():
            if key not in LABEL_KEYS and isinstance(value, (list, dict)) and value:
                counts[key] = counts.get(key, 0) + 1
    if not counts:
        return []
    keys = sorted(counts, key=lambda k: (-counts[k], k))
    named = ", ".join(f"metadata.{k} ({counts[k]} quer{'y' if counts[k] == 1 else 'ies'})" for k in keys[:5])
    more = f" and {len(keys) - 5} more keys" if len(keys) > 5 else ""
    return [f"labels are read from metadata.answers ([{{doc_id, start, text}}]) and metadata.spans "
            f"([{{doc_id, start, end}}]) only; not read: {named}{more}. Rename a key holding spans or answers "
            "to use it."]


def _offset(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _raw_labels(qid: str, metadata: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """(answers with text, spans, warnings) of one query's metadata. An answer entry with `start` and `end`
    but no text is a span; an entry that is neither is reported, not dropped silently."""
    answers: list[dict[str, Any]] = []
    spans: list[dict[str, Any]] = []
    warnings: list[str] = []
    raw_answers = metadata.get("answers") or []
    raw_spans = metadata.get("spans") or []
    for field_name, entries in (("answers", raw_answers), ("spans", raw_spans)):
        if not isinstance(entries, list):
            warnings.append(f"query {qid}: metadata.{field_name} is not a list: ignored")
            continue
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("doc_id") is None:
                warnings.append(f"query {qid}: a label in metadata.{field_name} has no doc_id: ignored "
                                f"({json.dumps(entry, ensure_ascii=False)[:80]})")
                continue
            start, end = _offset(entry.get("start")), _offset(entry.get("end"))
            if field_name == "answers" and entry.get("text"):
                answers.append(entry)
            elif start is not None and end is not None and end > start:
                spans.append({"doc_id": str(entry["doc_id"]), "start": start, "end": end})
            else:
                warnings.append(f"query {qid}: a label in metadata.{field_name} has neither answer text nor a span "
                                f"(start < end): ignored ({json.dumps(entry, ensure_ascii=False)[:80]})")
    return answers, spans, warnings


# ------------------------------------------------------------------------------------------ simple format
def _as_list(value: Any, where: str, what: str, csv_row: bool) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        items = value.split(";") if csv_row else [value]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = value
    else:
        raise EvaluationError(f"{where}: `{what}` must be a list of strings"
                              f"{' (or one string)' if what == 'answer' else ''}, got {json.dumps(value)[:60]}.")
    return [i.strip() for i in items if i.strip()]


def should_answer_value(value: Any, where: str) -> bool:
    """`should_answer` of a line: true unless given as false (JSON false, or false/no/0 in a CSV cell)."""
    if value is None or value == "" or isinstance(value, bool):
        return value is not False
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "1", "false", "no", "0"):
        return value.strip().lower() in ("true", "yes", "1")
    raise EvaluationError(f"{where}: `should_answer` must be true or false, got {json.dumps(value)[:40]}.")


def excluded_reason(row: Mapping[str, Any], where: str) -> str | None:
    """Why a line is left out of a retrieval run: "dropped" (review), "should_not_answer", or None."""
    if str(row.get("review") or "").strip() == "dropped":
        return "dropped"
    return None if should_answer_value(row.get("should_answer"), where) else "should_not_answer"


def _turns(value: Any, where: str, what: str) -> list[ConversationTurn]:
    """A conversation's turns ({"role", "content"} objects); errors name the line, the field and the turn."""
    if not isinstance(value, list):
        raise EvaluationError(f"{where}: `{what}` must be a list of {{\"role\", \"content\"}} objects, got "
                              f"{json.dumps(value, ensure_ascii=False)[:60]}.")
    turns = []
    for n, item in enumerate(value, start=1):
        if not isinstance(item, dict):
            raise EvaluationError(f"{where}: `{what}`, turn {n}: expected an object with role and content.")
        role, content = item.get("role"), item.get("content")
        if role not in ROLES:
            raise EvaluationError(f"{where}: `{what}`, turn {n}: role must be user or assistant (got "
                                  f"{json.dumps(role, ensure_ascii=False)[:40]}).")
        if not isinstance(content, str) or not content.strip():
            raise EvaluationError(f"{where}: `{what}`, turn {n}: `content` is missing or empty.")
        extra = set(item) - {"role", "content"}
        if extra:
            raise EvaluationError(f"{where}: `{what}`, turn {n}: unknown field(s) {', '.join(sorted(extra))}; a turn "
                                  "has role and content.")
        turns.append(ConversationTurn(role, content.strip()))
    return turns


def conversation_question(row: Mapping[str, Any], where: str,
                          csv_row: bool = False) -> tuple[str, tuple[ConversationTurn, ...]]:
    """The line's question and the conversation before it: `query` (with an optional `history`), or `turns`."""
    if csv_row and ({"turns", "history"} & set(row)):
        raise EvaluationError(f"{where}: a CSV set cannot hold conversations; write a .jsonl file with `turns` (or "
                              "`query` and `history`).")
    if "turns" in row:
        if "query" in row or "history" in row:
            raise EvaluationError(f"{where}: give either `turns` (the whole conversation, ending with the question) "
                                  "or `query` with an optional `history`, not both.")
        turns = _turns(row["turns"], where, "turns")
        if not turns or turns[-1].role != "user":
            raise EvaluationError(f"{where}: the last of `turns` must be the user's question the labels are for.")
        return turns[-1].content, tuple(turns[:-1])
    text = row.get("query")
    if not isinstance(text, str) or not text.strip():
        raise EvaluationError(f"{where}: `query` is missing or empty.")
    history = _turns(row["history"], where, "history") if row.get("history") is not None else []
    return text.strip(), tuple(history)


def _user_query(row: Mapping[str, Any], where: str, default_id: str, csv_row: bool) -> EvalQuery | str:
    """The line's query, or why it is left out of a retrieval run (`excluded_reason`)."""
    unknown = set(row) - {"id", "query", "turns", "relevant", "answer", *ITEM_FIELDS}
    if unknown:
        raise EvaluationError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; use query (or turns), "
                              f"relevant, answer and optionally id (or a test set's {', '.join(ITEM_FIELDS)}).")
    text, history = conversation_question(row, where, csv_row)
    excluded = excluded_reason(row, where)
    relevant = _as_list(row.get("relevant"), where, "relevant", csv_row)
    if excluded is not None:
        return excluded
    if not relevant:
        raise EvaluationError(f"{where}: `relevant` is missing or empty: list the doc ids that answer the query "
                              "(paths inside the knowledge base, e.g. runbooks/cpu_high.md), or mark the line "
                              "\"should_answer\": false.")
    answers = _as_list(row.get("answer"), where, "answer", False)
    qid = str(row.get("id") or "").strip() or default_id
    return EvalQuery(qid, text, {d: 1 for d in relevant}, tuple(Answer(a) for a in answers), history=history)


def _rows(data: bytes | str, name: str, required: set[str],
          columns: str) -> Iterator[tuple[str, Mapping[str, Any], bool]]:
    """(where, row, is_csv) for each record of a JSONL or CSV file (chosen by `name`'s extension); blank
    lines and rows are skipped; a CSV header must name the `required` columns (`columns` says which)."""
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        line = exc.object[:exc.start].count(b"\n") + 1
        raise EvaluationError(f"{name}, line {line}: byte 0x{data[exc.start]:02X} is not UTF-8; save the file as "
                              "UTF-8.") from None
    ext = Path(name).suffix.lower()
    if ext in (".jsonl", ".json", ".ndjson"):
        for line_no, row in _json_objects(text.splitlines(), name):
            yield f"{name}, line {line_no}", row, False
    elif ext in (".csv", ".tsv"):
        reader = csv.DictReader(io.StringIO(text), delimiter="\t" if ext == ".tsv" else ",")
        if not reader.fieldnames or not required <= {f.strip() for f in reader.fieldnames}:
            raise EvaluationError(f"{name}: the header must name the columns {columns}.")
        for row_no, row in enumerate(reader, start=2):
            if None in row:
                raise EvaluationError(f"{name}, line {row_no}: more values than columns (quote fields with commas).")
            clean = {k.strip(): (v or "") for k, v in row.items()}
            if any(v.strip() for v in clean.values()):
                yield f"{name}, line {row_no}", clean, True
    else:
        raise EvaluationError(f"{name}: use a .jsonl or .csv file.")


def _unique_ids(ids: Sequence[str], name: str) -> None:
    seen: set[str] = set()
    for qid in ids:
        if qid in seen:
            raise EvaluationError(f"{name}: query id {qid!r} appears twice.")
        seen.add(qid)


def parse_user_set(data: bytes | str, name: str) -> list[EvalQuery]:
    """JSONL or CSV (chosen by `name`'s extension) -> queries. Errors name the line and the field."""
    return _parse_user_set(data, name)[0]


def _parse_user_set(data: bytes | str, name: str) -> tuple[list[EvalQuery], dict[str, int]]:
    """(queries, lines left out by reason: see `excluded_reason`)."""
    if Path(name).suffix.lower() not in (".jsonl", ".json", ".ndjson", ".csv", ".tsv"):
        raise EvaluationError(f"{name}: use a .jsonl or .csv file (query, relevant, optional answer).")
    queries: list[EvalQuery] = []
    excluded: dict[str, int] = {}
    for where, row, is_csv in _rows(data, name, {"query", "relevant"},
                                    "query and relevant (and optionally answer, id)"):
        parsed = _user_query(row, where, "q" + where.rsplit(" ", 1)[-1], is_csv)
        if isinstance(parsed, str):
            excluded[parsed] = excluded.get(parsed, 0) + 1
        else:
            queries.append(parsed)
    if not queries:
        left_out = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(excluded.items()))
        raise EvaluationError(f"{name} contains no queries" + (f" a retrieval run can score (left out: {left_out})."
                                                                if excluded else "."))
    _unique_ids([q.query_id for q in queries], name)
    return queries, excluded


def read_query_file(path: Path) -> list[tuple[str, str, tuple[ConversationTurn, ...]]]:
    """(id, query, the conversation before it) of a query list for `search --queries`: .jsonl objects with `query`
    (and an optional `history`) or `turns`, and an optional `id`, or a .csv with a `query` column and optional `id`.
    Other fields are ignored, so an evaluation set (conversations too) works as a query list. The default id is
    `q<line>`."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise EvaluationError(f"Query file {path} does not exist.") from None
    except IsADirectoryError:
        raise EvaluationError(f"Query file {path} is a folder; give a .jsonl or .csv file.") from None
    out: list[tuple[str, str, tuple[ConversationTurn, ...]]] = []
    for where, row, is_csv in _rows(data, str(path), {"query"}, "query (and optionally id)"):
        text, history = conversation_question(row, where, is_csv)
        qid = str(row.get("id") or "").strip() or "q" + where.rsplit(" ", 1)[-1]
        out.append((qid, text, history))
    if not out:
        raise EvaluationError(f"{path} contains no queries.")
    _unique_ids([qid for qid, _, _ in out], str(path))
    return out


def load_folder_corpus(folder: str | os.PathLike[str], refused: list[str] | None = None) -> tuple[Document, ...]:
    """Every supported file of a folder as Documents, doc ids relative to it (as `ingest FOLDER` does).
    A file ingest would refuse (binary, empty, a link out of the folder, ...) raises, or, when a
    `refused` list is given, is left out and its reason appended there, as ingest reports it and goes on."""
    from .. import loaders
    from ..errors import LoaderError

    folder = Path(folder)
    if not folder.is_dir():
        raise EvaluationError(f"Corpus folder {folder} does not exist.")
    docs = []
    for path, root in loaders.iter_files([folder]):
        try:
            docs.append(loaders.load_path(path, root))
        except LoaderError as exc:
            if refused is None:
                raise
            refused.append(str(exc))
    if not docs:
        raise EvaluationError(f"Corpus folder {folder} has no supported files"
                              + (f" that can be read (first refusal: {refused[0]})." if refused else "."))
    return tuple(docs)


def load_user_set(source: str | os.PathLike[str] | bytes, *, name: str | None = None,
                  corpus: str | os.PathLike[str] | Sequence[Document] | None = None,
                  limit: int | None = None, sample: int | None = None, seed: int | None = None) -> EvalSet:
    """A hand-written set (a path, or bytes with `name`), with its corpus folder or documents; without
    a corpus the set is meant for an existing knowledge base (`run_evaluation(..., live=True)`)."""
    if isinstance(source, bytes):
        if not name:
            raise EvaluationError("An uploaded evaluation set needs its file name (.jsonl or .csv).")
        data, label = source, name
    else:
        path = Path(source)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise EvaluationError(f"Evaluation set {path} does not exist.") from None
        label = name or path.name
    parsed, excluded = _parse_user_set(data, label)
    queries, subset = choose_queries(parsed, limit=limit, sample=sample, seed=seed)
    documents: tuple[Document, ...] | None
    refused: list[str] = []
    if corpus is None:
        documents = None
    elif isinstance(corpus, (str, os.PathLike)):
        documents = load_folder_corpus(corpus, refused)
    else:
        documents = tuple(corpus)
    info = {"format": "simple", "source": label if isinstance(source, bytes) else str(source), "split": None,
            "limit": limit, "queries": subset, "excluded": excluded,
            "label_warnings": [f"corpus file not indexed: {reason}" for reason in refused],
            "corpus": {"documents": len(documents) if documents is not None else None,
                       "folder": str(corpus) if isinstance(corpus, (str, os.PathLike)) else None,
                       "sliced": False, "rule": "whole folder" if documents is not None else "live knowledge base"}}
    return EvalSet(Path(label).stem, tuple(queries), documents, info)


def answers_located(eval_set: EvalSet) -> list[str]:
    """Warnings for labels that cannot be right or used: relevant ids missing from the corpus, answers not
    found, labels dropped while loading (no text and no span, a span outside its document)."""
    if eval_set.documents is None:
        return []
    texts = {d.doc_id: d.text for d in eval_set.documents}
    skipped = eval_set.info.get("skipped_queries") or []
    warnings = [f"{len(skipped)} judged quer{'y' if len(skipped) == 1 else 'ies'} without text skipped: "
                f"{', '.join(skipped[:5])}"] if skipped else []
    warnings += list(eval_set.info.get("label_warnings") or [])
    for q in eval_set.queries:
        absent = [d for d in q.relevant if d not in texts]
        if absent:
            warnings.append(f"query {q.query_id}: relevant document(s) not in the corpus: {', '.join(absent)}")
        for a in q.answers:
            if a.start is None and not any(a.text in texts.get(d, "") for d in q.relevant):
                warnings.append(f"query {q.query_id}: answer {a.text[:40]!r} is not in any relevant document")
    return warnings


# ------------------------------------------------------------------------------------------ bundled sets
SAMPLE_SETS = {SAMPLE_NAME: SAMPLE_QUERIES, SAMPLE_CONVERSATIONS_NAME: SAMPLE_CONVERSATIONS}  # over examples/kb


def eval_sets_dir(env: Mapping[str, str] | None = None) -> Path | None:
    """Where the bundled BEIR sets live: $RAG_EVAL_DIR, else ../shared/eval next to the repository."""
    env = os.environ if env is None else env
    for candidate in (env.get(EVAL_DIR_ENV, ""), str(REPO_ROOT.parent / "shared" / "eval")):
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return None


def bundled_sets(env: Mapping[str, str] | None = None) -> dict[str, Path]:
    """Set name -> location: "sample" (examples/kb_queries.jsonl over examples/kb), "sample-conversations"
    (examples/kb_conversations.jsonl over examples/kb) and each BEIR folder."""
    sets = {name: path for name, path in SAMPLE_SETS.items() if path.is_file()}
    root = eval_sets_dir(env)
    if root is not None:
        for folder in sorted(root.iterdir()):
            if (folder / "corpus.jsonl").is_file() and beir_splits(folder):
                sets[folder.name] = folder
    return sets


