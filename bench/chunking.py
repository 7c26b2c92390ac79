"""Chunking throughput (MB/s) and mid-sentence cuts: rag_core.chunking vs langchain-text-splitters
(MarkdownHeaderTextSplitter, then RecursiveCharacterTextSplitter at the same size and overlap), on the
COVID-QA corpus (98 papers, 2.3 MB) and the sample knowledge base.

A chunk is *cut mid-sentence* when its end is not a sentence end: the chunk does not end with
. ! ? 。 ？ ！ (optionally followed by closing quotes/brackets) and is not followed in the document by a
line break or the end of the document. LangChain chunks carry no offsets; each is located in the
document with str.find after the previous one (chunks it cannot find are judged by their own text).
Throughput is the best of several runs over the whole corpus, in MB of UTF-8 text per second.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from bench.common import REPO, best_of, log, main, need_set, ratio, record_and_print, section, table
from rag_core.chunking import chunk_text

SIZE, OVERLAP = 800, 100
_END = re.compile(r"[.!?。？！][\"'”’」』）)\]]*$")


def langchain_chunks(text: str, size: int = SIZE, overlap: int = OVERLAP) -> list[str]:
    from langchain_text_splitters import MarkdownHeaderTextSplitter, RecursiveCharacterTextSplitter

    headers = [("#", "h1"), ("##", "h2"), ("###", "h3"), ("####", "h4"), ("#####", "h5"), ("######", "h6")]
    sections = MarkdownHeaderTextSplitter(headers, strip_headers=False).split_text(text)
    splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    return [d.page_content for d in splitter.split_documents(sections)]


def mid_sentence(text: str, chunks: Sequence[str]) -> int:
    cuts, pos = 0, 0
    for chunk in chunks:
        body = chunk.rstrip()
        if not body:
            continue
        at = text.find(body, pos)
        if at < 0:
            at = text.find(body)
        if at >= 0:
            pos = at + 1
            end = at + len(body)
            rest = text[end:].lstrip(" \t")
            if not rest or rest[0] == "\n":
                continue
        if not _END.search(body):
            cuts += 1
    return cuts


def corpora(quick: bool) -> dict[str, list[str]]:
    texts = [json.loads(line)["text"] for line in (need_set("covidqa") / "corpus.jsonl").open(encoding="utf-8")]
    sample = [p.read_text(encoding="utf-8") for p in sorted((REPO / "examples" / "kb").rglob("*.md"))]
    return {"COVID-QA": texts[:20] if quick else texts, "sample KB": sample}


def measure(quick: bool = False) -> dict:
    repeat = 2 if quick else 3
    payload: dict = {"size": SIZE, "overlap": OVERLAP, "corpora": {}}
    for name, texts in corpora(quick).items():
        mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
        log(f"chunking: {name} ({mb:.2f} MB) ...")
        ours_s, ours = best_of(lambda: [[c.text for c in chunk_text(t, SIZE, OVERLAP)] for t in texts], repeat)
        lc_s, lc = best_of(lambda: [langchain_chunks(t) for t in texts], repeat)
        payload["corpora"][name] = {
            "mb": mb, "ours_mb_s": mb / ours_s, "langchain_mb_s": mb / lc_s, "ours_chunks": sum(map(len, ours)),
            "langchain_chunks": sum(map(len, lc)),
            "ours_mid_sentence": sum(mid_sentence(t, cs) for t, cs in zip(texts, ours)),
            "langchain_mid_sentence": sum(mid_sentence(t, cs) for t, cs in zip(texts, lc)),
            "langchain_over_size": sum(len(c) > SIZE for cs in lc for c in cs)}
    return payload


def render(record: dict) -> str:
    rows = []
    for name, c in record["corpora"].items():
        rows.append([name, f"{c['mb']:.2f}", c["ours_mb_s"], c["langchain_mb_s"],
                     ratio(c["ours_mb_s"], c["langchain_mb_s"]), c["ours_chunks"], c["langchain_chunks"],
                     f"{c['ours_mid_sentence']} ({c['ours_mid_sentence'] / c['ours_chunks']:.1%})",
                     f"{c['langchain_mid_sentence']} ({c['langchain_mid_sentence'] / c['langchain_chunks']:.1%})"])
    md = table(["corpus", "MB", "ours MB/s", "langchain MB/s", "ratio", "ours chunks", "langchain chunks",
                "ours cut mid-sentence", "langchain cut mid-sentence"], rows, 2)
    md += (f"\n\nSize {record['size']}, overlap {record['overlap']} characters for both; langchain = "
           "MarkdownHeaderTextSplitter (strip_headers=False) then RecursiveCharacterTextSplitter. Ratio = ours / "
           "langchain (higher is faster)." + (" Quick run: the first 20 COVID-QA papers." if record["quick"] else ""))
    return section("Chunking throughput vs langchain-text-splitters", md, record)


def run(quick: bool = False) -> str:
    return record_and_print("chunking", quick, measure(quick), render)


if __name__ == "__main__":
    main(run, __doc__)
