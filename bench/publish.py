"""`python -m bench.publish`: rewrite the benchmark tables and summaries in bench/README.md from the
result records (bench/results/*.json, rag_core/embedding/tradeoff.json). `--check` changes nothing and
exits 1 when a block differs from its record (tests/bench/test_published.py runs the same check).

A generated block sits between `<!-- bench:NAME ... -->` and `<!-- /bench:NAME -->`; edit the record
or rerun the benchmark, never the block. bench/README.md is the only page with generated figures: the
README and docs/ link to it rather than copy them, so no copy can go stale.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from bench import (
    api,
    chunking,
    conversations,
    dictionary,
    expand,
    explain,
    filters,
    folding,
    formats,
    fusion,
    host,
    ingest,
    keywords,
    latency,
    offline_answers,
    quality,
    scale,
    sources,
    startup,
    testsets,
    tradeoff,
    tune_agreement,
    tune_halves,
    upgrade,
)
from bench.common import REPO, load

README = REPO / "bench" / "README.md"
RESULTS = (("chunking", chunking.render), ("ingest", ingest.render), ("latency", latency.render),
           ("startup", startup.render), ("quality", quality.render), ("host", host.render), ("api", api.render),
           ("formats", formats.render), ("testsets", testsets.render), ("filters", filters.render),
           ("conversations", conversations.render), ("offline_answers", offline_answers.render),
           ("scale", scale.render), ("sources", sources.render), ("keywords", keywords.render),
           ("dictionary", dictionary.render), ("upgrade", upgrade.render))


def _results() -> str:
    sections = []
    for name, render in RESULTS:
        record = load(name)
        if record is not None:
            sections.append(render(record))
    return "\n".join(sections)


def _one(name: str, render: Callable[[dict], str], path: Path | None = None) -> Callable[[], str]:
    def text() -> str:
        record = load(name, path=path)
        return render(record) if record is not None else f"_No `{name}` result yet: run `python -m bench.{name}`._\n"
    return text


BLOCKS: dict[str, Callable[[], str]] = {
    "results": _results,
    "tradeoff": _one("tradeoff", tradeoff.render, tradeoff.output_path(False)),
    "explain": _one("explain", explain.render),
    "fusion": _one("fusion", fusion.render),
    "folding": _one("folding", folding.render),
    "expand": _one("expand", expand.render),
    "tune_agreement": _one("tune_agreement", tune_agreement.render),
    "tune_halves": _one("tune_halves", tune_halves.render),
    # one sentence each on what the tables of the results block say
    "summary-api": _one("api", api.summary),
    "summary-host": _one("host", host.summary),
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- bench:{name}\b[^>]*-->\n)(.*?)(<!-- /bench:{name} -->)", re.S)


def publish(check: bool = False) -> list[str]:
    """Rewrite every generated block of bench/README.md (or only compare, with `check`); returns
    "bench/README.md: block" for each block that was (or would be) changed."""
    changed = []
    text = original = README.read_text(encoding="utf-8")
    for name, render in BLOCKS.items():
        pattern = _pattern(name)
        if pattern.search(text):
            body = render()
            text = pattern.sub(lambda m, body=body: m.group(1) + body + m.group(3), text)
            if pattern.search(original).group(2) != body:
                changed.append(f"{README.relative_to(REPO)}: {name}")
    if text != original and not check:
        README.write_text(text, encoding="utf-8")
    return changed


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.publish", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only report tables that differ from their records")
    args = parser.parse_args()
    changed = publish(check=args.check)
    for item in changed:
        print(("differs: " if args.check else "updated: ") + item)
    if args.check and changed:
        sys.exit(1)


if __name__ == "__main__":
    main()
