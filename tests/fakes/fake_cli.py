#!/usr/bin/env python3
"""A fake agent CLI for the core's tests. It runs a script of steps given as JSON in argv[1] (or on stdin when
argv[1] is "-"), printing AG-UI events as JSON lines, so tests can make it stream, stall, crash, exit non-zero,
print huge lines and non-JSON, ignore SIGTERM/SIGINT and start grandchildren.

Steps: {"emit": {...event...}} | {"text": "..."} (TEXT_MESSAGE_CONTENT of message "m") | {"sleep": s} |
{"stderr": "..."} | {"raw": "line as is"} | {"flood": n} (n text deltas at full speed) |
{"huge": n_bytes} | {"exit": code} | {"kill": signal_number} |
{"ignore": ["SIGTERM", "SIGINT"]} | {"grandchild": pid_file} (a child that sleeps for an hour, same group) |
{"stall": true} (sleep forever, print nothing). On SIGINT (unless ignored) it prints an "interrupted" RAW event
and exits 0, like the real CLIs do.
"""

import json
import os
import signal
import subprocess
import sys
import time


def out(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def on_sigint(signum, frame):
    out(json.dumps({"type": "RAW", "event": {"interrupted": True}, "source": "fake-cli"}))
    sys.exit(0)


def main() -> None:
    source = sys.stdin.read() if sys.argv[1] == "-" else sys.argv[1]
    steps = json.loads(source)
    signal.signal(signal.SIGINT, on_sigint)
    for step in steps:
        if "emit" in step:
            out(json.dumps(step["emit"]))
        elif "text" in step:
            out(json.dumps({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": step["text"]}))
        elif "flood" in step:
            for i in range(step["flood"]):
                sys.stdout.write(f'{{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"{i} "}}\n')
            sys.stdout.flush()
        elif "sleep" in step:
            time.sleep(step["sleep"])
        elif "stderr" in step:
            sys.stderr.write(step["stderr"] + "\n")
            sys.stderr.flush()
        elif "raw" in step:
            out(step["raw"])
        elif "huge" in step:
            chunk = "x" * (1024 * 1024)
            remaining = step["huge"]
            sys.stdout.write('{"type":"TEXT_MESSAGE_CONTENT","messageId":"huge","delta":"')
            while remaining > 0:
                sys.stdout.write(chunk[: min(remaining, len(chunk))])
                remaining -= len(chunk)
            sys.stdout.write('"}\n')
            sys.stdout.flush()
        elif "exit" in step:
            sys.exit(step["exit"])
        elif "kill" in step:
            os.kill(os.getpid(), step["kill"])
            time.sleep(5)
        elif "ignore" in step:
            for name in step["ignore"]:
                signal.signal(getattr(signal, name), signal.SIG_IGN)
        elif "grandchild" in step:
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            with open(step["grandchild"], "w") as pid_file:
                pid_file.write(str(child.pid))
        elif "wait_file" in step:  # until the test creates the file (bounded: 60 s)
            deadline = time.monotonic() + 60
            while not os.path.exists(step["wait_file"]) and time.monotonic() < deadline:
                time.sleep(0.02)
        elif "stall" in step:
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
