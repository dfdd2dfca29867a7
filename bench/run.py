"""``make bench``: every benchmark in one run, inside a loopback-only network namespace; writes
docs/benchmarks.md, docs/benchmarks/*.png and docs/benchmarks/results.json.

``--quick`` runs fewer repetitions (for trying the harness, not for figures); ``--smoke`` the tiniest workload, to
show that everything runs (tests/bench), with ``--out DIR`` to write the page there instead of docs/."""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import isolate_or_die  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true")
    parser.add_argument("--out", type=Path, default=None, help="where benchmarks.md goes (default docs/)")
    parser.add_argument("--reference", default=None, help="the reference runner's folder (adapter ratios; default "
                        "$AMBIENT_REFERENCE_RUNNER, else the ratios say 'reference not available')")
    args = parser.parse_args()
    isolate_or_die()  # before any thread or subprocess starts

    import adapter_ratios  # noqa: PLC0415
    import adapters  # noqa: PLC0415
    import long_thread  # noqa: PLC0415
    import memory  # noqa: PLC0415
    import model_proxy  # noqa: PLC0415
    import relay  # noqa: PLC0415
    import report  # noqa: PLC0415
    import startup  # noqa: PLC0415
    import tracing  # noqa: PLC0415
    import turns  # noqa: PLC0415

    reps = 2 if args.quick else 5
    results = {"meta": {"cpus": os.cpu_count(), "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                        "date": datetime.date.today().isoformat()}}

    def measured(module: Any, **workload: Any) -> Any:
        return module.measure(**(module.SMOKE if args.smoke else workload))

    # The latency-sensitive benchmarks first, while the machine is quiet: right after the CPU-heavy ones (adapters,
    # callgrind, relay floods) the per-turn overhead measured on a shared VM rose by 3-14 ms with the runner's own
    # turns unchanged (docs/performance.md, fourth session).
    print("bench: turn latency (real CLIs, scripted model)", flush=True)
    results["turns"] = measured(turns, runs=reps, later=10)
    print("bench: a long thread per runner (runner beside the bare persistent CLI, turn by turn)", flush=True)
    results["long_thread"] = measured(long_thread, turns=50 if args.quick else 500)
    print("bench: model proxy cost (time to first byte, whole response, stream throughput)", flush=True)
    results["model_proxy"] = measured(model_proxy, requests=100 if args.quick else 300,
                                      stream_runs=4 if args.quick else 10)
    print("bench: relay overhead, throughput, memory", flush=True)
    results["relay"] = measured(relay, latency_runs=reps, throughput_runs=reps, memory_runs=1 if args.quick else 3)
    print("bench: start-up", flush=True)
    results["startup"] = measured(startup, runs=3 if args.quick else 7)
    print("bench: the pod's memory per runner (runner process + the CLI it keeps; /ready, 1 run, 20 turns)",
          flush=True)
    results["memory"] = measured(memory, runs=1 if args.quick else 3)
    print("bench: tracing on and off (OTLP to a backend on loopback)", flush=True)
    results["tracing"] = measured(tracing, runs=reps, events=20_000 if args.quick else 100_000)
    print("bench: adapters", flush=True)
    results["adapters"] = measured(adapters, runs=5 if args.quick else 15)
    print("bench: adapters against the reference runner's (same streams; wall clock and callgrind)", flush=True)
    results["adapter_ratios"] = (adapter_ratios.measure(**adapter_ratios.SMOKE, reference=args.reference)
                                 if args.smoke else adapter_ratios.measure(
                                     lines=20_000 if args.quick else 100_000, runs=3 if args.quick else 5,
                                     callgrind_lines=1_000 if args.quick else 3_000, reference=args.reference))
    notes_file = Path(__file__).resolve().parent / "NOTES.md"
    notes = notes_file.read_text() if notes_file.exists() else ""
    out = report.write(results, notes, args.out or report.DOCS)
    print(f"bench: wrote {out}")
    print(report.table(results))


if __name__ == "__main__":
    main()
