"""Before/after: start-up (process start -> /ready) and the pod's memory (bench/memory.py) of this checkout and
another one (``--before DIR``, e.g. a worktree of main), interleaved: per round and runner type, one memory sample
and ``--starts`` start-ups of each side, the side going first alternating, so both see the same shared machine.

    git worktree add ../main-before main && python bench/compare.py --before ../main-before --rounds 3

Prints one JSON document: per runner type and side, the summaries (start-up in s, memory in KiB) and every sample."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import memory
import startup
from common import REPO, isolate_or_die, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout (its main.py and packages)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--starts", type=int, default=3, help="start-ups per side, round and runner type")
    parser.add_argument("--turns", type=int, default=memory.TURNS)
    parser.add_argument("kinds", nargs="*", default=list(memory.RUNNER_TYPES))
    args = parser.parse_args()
    isolate_or_die()
    sides = {"before": args.before.resolve(), "after": REPO}
    mem: dict[str, dict[str, list[Any]]] = {k: {s: [] for s in sides} for k in args.kinds}
    ready: dict[str, dict[str, list[float]]] = {k: {s: [] for s in sides} for k in args.kinds}
    for kind in args.kinds:  # warm the page cache of both checkouts
        for repo in sides.values():
            startup.start_once(kind, repo)
    for round_ in range(args.rounds):
        for kind in args.kinds:
            order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
            for side in order:
                ready[kind][side] += [startup.start_once(kind, sides[side])[1] for _ in range(args.starts)]
                mem[kind][side].append(memory.sample(kind, sides[side], args.turns))
    out = {kind: {side: {"ready_s": summary(ready[kind][side]), "memory_kib": memory.pack(mem[kind][side]),
                         "samples": {"ready_s": ready[kind][side], "memory_kib": mem[kind][side]}}
                  for side in sides} for kind in args.kinds}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
