#!/usr/bin/env python3
"""A fake agent CLI for the benchmarks: prints AG-UI text events as JSON lines.

Reads ``{"count": N, "rate": R}`` from stdin. ``rate`` > 0: one event every 1/R s, each flushed at once and stamped
with ``time.monotonic_ns()`` (CLOCK_MONOTONIC, the same clock in every process of the machine) in its delta, so a
client can compute receive - write. ``rate`` 0: as fast as possible (the pipe's back-pressure is the only limit).
"""

import json
import sys
import time


def main() -> None:
    config = json.loads(sys.stdin.read())
    count, rate = int(config["count"]), float(config.get("rate", 0))
    out = sys.stdout
    out.write('{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}\n')
    if rate > 0:
        period = 1_000_000_000 / rate
        start = time.monotonic_ns()
        for i in range(count):
            wait = (start + i * period - time.monotonic_ns()) / 1e9
            if wait > 0:
                time.sleep(wait)
            out.write('{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"t=%d "}\n' % time.monotonic_ns())  # noqa: UP031 - hot loop
            out.flush()
    else:
        line = '{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"the quick brown fox jumps over the dog "}\n'
        for _ in range(count // 100):
            out.write(line * 100)
        out.write(line * (count % 100))
    out.write('{"type":"TEXT_MESSAGE_END","messageId":"m"}\n')
    out.flush()


if __name__ == "__main__":
    main()
