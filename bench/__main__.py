"""`python -m bench` (`make bench`): every benchmark, each printing our figure next to its baseline's from
the same run. `--quick` for a short smoke run; `--only NAME` (repeatable) for some of them. Each is also
runnable alone: `python -m bench.chunking|ingest|latency|quality|tradeoff|fusion|folding|explain|startup|api|
host|formats|testsets|filters|conversations|offline_answers|expand|scale|sources|keywords|dictionary|
tune_agreement|tune_halves|upgrade [--quick]`
(scale: a million chunks, about an hour on two cores; `python -m bench.scale --chunks N` for fewer).

A full run writes each result record to bench/results/<name>.json (the trade-off to
rag_core/embedding/tradeoff.json, which the app reads; tune_agreement also rag_core/evaluation/tune_agreement.json,
what a generated set may tune) and then rewrites the tables in bench/README.md from
them (`python -m bench.publish`). A quick run writes bench/results/quick/ (git-ignored) and
bench/results/quick/latest.md, and publishes nothing.
"""

from __future__ import annotations

import argparse
import time

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
from bench.common import RESULTS, load_note, log, machine
from bench.publish import publish

# In this order: tradeoff reads the ingest record of the same run; explain reuses quality's indexes.
BENCHMARKS = {"chunking": chunking.run, "ingest": ingest.run, "latency": latency.run, "quality": quality.run,
              "tradeoff": tradeoff.run, "fusion": fusion.run, "folding": folding.run, "explain": explain.run,
              "startup": startup.run, "api": api.run, "host": host.run, "formats": formats.run,
              "testsets": testsets.run, "filters": filters.run, "conversations": conversations.run,
              "offline_answers": offline_answers.run, "expand": expand.run, "scale": scale.run,
              "sources": sources.run, "keywords": keywords.run, "dictionary": dictionary.run,
              "tune_agreement": tune_agreement.run, "tune_halves": tune_halves.run, "upgrade": upgrade.run}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small inputs: a smoke run of a few minutes")
    parser.add_argument("--only", action="append", choices=list(BENCHMARKS), help="run only this one (repeatable)")
    args = parser.parse_args()
    started = time.perf_counter()
    log(f"bench on {machine()} ({load_note()})")
    texts = [BENCHMARKS[name](args.quick) for name in BENCHMARKS if not args.only or name in args.only]
    if args.quick:
        (RESULTS / "quick").mkdir(parents=True, exist_ok=True)
        (RESULTS / "quick" / "latest.md").write_text(f"# Benchmarks (quick)\n\n{machine()}\n\n" + "\n".join(texts),
                                                     encoding="utf-8")
    else:
        for item in publish():
            log(f"updated {item}")
    log(f"all benchmarks done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
