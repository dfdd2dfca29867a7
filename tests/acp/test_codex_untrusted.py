"""codex-acp's Codex through ``codex_untrusted.py`` (ACP_AGENT=codex-acp, the trust rule): each folder codex-acp
marks trusted for a thread reaches Codex untrusted, everything else byte for byte; the relay starts the command it
is given, hands Codex's output straight through, passes a stop on, and ends with Codex's status. (The real agent
with a hostile workflow: tests/workspace/test_workflow_trust.py.)"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from ambient_runner.bridges.acp import codex_untrusted
from ambient_runner.bridges.acp.codex_acp import UNTRUSTED_RELAY, codex_of

ECHO = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()\n"
START = {"id": 5, "method": "thread/start", "params": {
    "cwd": "/w/flow", "config": {"features": {"x": False}, "projects": {
        "/w/flow": {"trust_level": "trusted"}, "/w/extra": {"trust_level": "trusted"}}}}}


def test_a_threads_folders_become_untrusted_and_nothing_else_changes() -> None:
    changed = json.loads(codex_untrusted.untrusted(json.dumps(START).encode() + b"\n"))
    assert changed["params"]["config"]["projects"] == {"/w/flow": {"trust_level": "untrusted"},
                                                       "/w/extra": {"trust_level": "untrusted"}}
    assert changed["params"]["config"]["features"] == {"x": False} and changed["params"]["cwd"] == "/w/flow"
    resume = {"id": 9, "method": "thread/resume", "params": {"threadId": "t", "config": {"projects": {
        "/w/other": {"trust_level": "trusted"}}}}}
    assert b'"untrusted"' in codex_untrusted.untrusted(json.dumps(resume).encode() + b"\n")
    for same in (b'{"id":1,"method":"turn/start","params":{"input":[{"text":"trust_level \\"trusted\\""}]}}\n',
                 b'{"id":2,"method":"initialize","params":{}}\n', b"not json trust_level\n"):
        assert codex_untrusted.untrusted(same) == same


def test_the_relay_runs_codex_and_passes_its_lines_on(tmp_path: Path) -> None:
    lines = [json.dumps(START), json.dumps({"id": 6, "method": "turn/start", "params": {"threadId": "t"}})]
    done = subprocess.run([sys.executable, "-I", "-S", str(UNTRUSTED_RELAY), sys.executable, "-c", ECHO],
                          input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=30, check=True)
    first, second = [json.loads(line) for line in done.stdout.splitlines()]
    assert {p["trust_level"] for p in first["params"]["config"]["projects"].values()} == {"untrusted"}
    assert second == json.loads(lines[1])


def test_a_stop_reaches_codex_and_the_relay_ends_with_its_status() -> None:
    relay = subprocess.Popen([sys.executable, "-I", "-S", str(UNTRUSTED_RELAY), sys.executable, "-c", ECHO],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert relay.stdin is not None and relay.stdout is not None
    relay.stdin.write('{"id":1}\n')
    relay.stdin.flush()
    assert relay.stdout.readline() == '{"id":1}\n'  # Codex (the echo) is up
    relay.send_signal(signal.SIGTERM)
    assert relay.wait(timeout=30) == 128 + signal.SIGTERM  # Codex ended by it, the relay with its status


def test_codex_is_found_as_node_would_find_it_from_codex_acp() -> None:
    codex = codex_of(str(Path(__file__).resolve().parents[2] / "node_modules" / ".bin" / "codex-acp"))
    assert codex is not None and codex.parts[-4:] == ("@openai", "codex", "bin", "codex.js")
    assert codex_of("/nowhere/codex-acp") is None
