"""`python -m bench` (`make bench`): every benchmark, each printing our figure next to its baseline's from
the same run. `--quick` for a short smoke run; `--only NAME` (repeatable) for some of them. Each is also
runnable alone: `python -m bench.chunking|ingest|latency|quality|startup|api|host [--quick]`.

Tables are printed and written to bench/results/<name>[-quick].md / .json, and the latest of each to
bench/results/latest[-quick].md (bench/results/ is git-ignored; copy the tables into bench/README.md).
"""

from __future__ import annotations

import argparse
import time

from bench import api, chunking, host, ingest, latency, quality, startup
from bench.common import RESULTS, load_note, log, machine

BENCHMARKS = {"chunking": chunking.run, "ingest": ingest.run, "latency": latency.run, "quality": quality.run,
              "startup": startup.run, "api": api.run, "host": host.run}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small inputs: a smoke run of a few minutes")
    parser.add_argument("--only", action="append", choices=list(BENCHMARKS), help="run only this one (repeatable)")
    args = parser.parse_args()
    started = time.perf_counter()
    log(f"bench on {machine()} ({load_note()})")
    for name in BENCHMARKS:
        if not args.only or name in args.only:
            BENCHMARKS[name](args.quick)
    # latest.md = the most recent table of every benchmark (this run's, or an earlier one's for those skipped)
    suffix = "-quick" if args.quick else ""
    tables = [(RESULTS / f"{name}{suffix}.md").read_text(encoding="utf-8") for name in BENCHMARKS
              if (RESULTS / f"{name}{suffix}.md").is_file()]
    (RESULTS / f"latest{suffix}.md").write_text(f"# Benchmarks\n\n{machine()}\n\n" + "\n".join(tables),
                                              encoding="utf-8")
    log(f"all benchmarks done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
