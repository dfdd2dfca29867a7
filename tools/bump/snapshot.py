"""What the installed version of a runner's CLI says, as JSON for the protocol diff (``tools.bump.shapes``):

    .venv/bin/python -m tools.bump.snapshot claude --out before.json [--fixtures DIR]
    .venv/bin/python -m tools.bump.snapshot codex-sdk --out after.json [--codex-bin PATH]
    .venv/bin/python -m tools.bump.snapshot gemini-cli --out after.json

* claude: the shape of each recorded stream (``tests/fixtures/claude/*.jsonl``, or ``--fixtures``) and of the
  command line the SDK's transport builds for the runner's options;
* codex-sdk: the methods and notifications the runner uses, from ``codex app-server generate-json-schema
  --experimental`` of the pinned binary (or ``--codex-bin``);
* gemini-cli: the fields of the CLI's ACP answers to ``initialize`` and ``session/new`` (models, modes,
  configOptions, capabilities), from the real ``gemini --acp`` on the scripted model, loopback only.

Each runs in its own process (the bump takes one before and one after reinstalling), so the modules imported are
the installed version's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tools.bump import codex_schema, pins, shapes

ROOT = pins.ROOT
FIXTURES = ROOT / "tests" / "fixtures"


def claude_snapshot(fixtures: Path) -> dict[str, Any]:
    streams: dict[str, Any] = {}
    samples: dict[str, dict[str, Any]] = {}
    for path in sorted(fixtures.glob("*.jsonl")):
        messages = [m for m in (json.loads(line) for line in path.read_text().splitlines() if line.strip())
                    if isinstance(m, dict)]
        shape = shapes.stream_shape(messages, shapes.claude_kind)
        streams[path.stem] = {kind: {p: sorted(t) for p, t in paths.items()} for kind, paths in shape.items()}
        for message in messages:
            samples.setdefault(shapes.claude_kind(message), message)
    return {"streams": streams, "transport": claude_transport(), "reads": sorted(claude_reads()),
            "rawKinds": sorted(kind for kind, message in samples.items() if _claude_raw(message))}


def _claude_raw(message: dict[str, Any]) -> bool:
    """Whether the adapter passes this message on as a RAW event (it neither translates nor drops it)."""
    from ag_ui_claude import ClaudeEventAdapter

    return any(type(e).__name__ == "RawEvent" for e in ClaudeEventAdapter("thread", "run").feed(message))


def claude_transport() -> dict[str, str]:
    """The flags of the command line the SDK builds for a thread's Claude Code, with every option the runner
    sets (model, resume, effort, MCP servers, the permission gate, sub-agents)."""
    from ag_ui_claude.sdk_private import command_line
    from ambient_runner.bridges.claude.config import build_options
    from ambient_runner.bridges.claude.transport import WatchedTransport
    from ambient_runner.settings import RunnerSettings

    async def allow(*_: Any) -> Any:
        return None

    with tempfile.TemporaryDirectory(prefix="bump-claude-") as tmp:
        root = Path(tmp)
        (root / "workspace").mkdir()
        settings = RunnerSettings(runner_type="claude", workspace_path=root / "workspace",
                                  runner_state_root=root / "state", runner_scripted_model=True)
        options = build_options(settings, cli_path=root / "claude", env={}, model="claude-sonnet-4-5",
                                resume="session-1", stderr=lambda _line: None, effort="high",
                                mcp_servers={"echo": {"type": "stdio", "command": "echo", "args": []}},
                                can_use_tool=allow)
        return shapes.argv_shape(command_line(WatchedTransport(options))[1:])


def claude_reads() -> frozenset[str]:
    """What the runner's Claude code and the SDK's message parser may read of a message (``names_read``)."""
    import claude_agent_sdk

    parser = Path(claude_agent_sdk.__file__).parent / "_internal" / "message_parser.py"
    sources = [*sorted((ROOT / "ag_ui_claude").glob("*.py")),
               *sorted((ROOT / "ambient_runner" / "bridges" / "claude").glob("*.py")), parser]
    return shapes.names_read("\n".join(p.read_text() for p in sources if p.is_file()))


def codex_snapshot(codex_bin: str | None) -> dict[str, Any]:
    if codex_bin is None:
        from codex_cli_bin import bundled_codex_path

        codex_bin = str(bundled_codex_path())
    with tempfile.TemporaryDirectory(prefix="bump-codex-schema-") as tmp:
        envelopes, definitions = codex_schema.load(codex_schema.generate(codex_bin, Path(tmp)))
    parts = codex_schema.used_protocol(envelopes, definitions)
    return {"codexBin": codex_bin, "protocol": codex_schema.to_json(parts),
            "experimentalMissing": codex_schema.experimental_missing(parts), "reads": sorted(codex_reads())}


def codex_reads() -> frozenset[str]:
    sources = [*sorted((ROOT / "ag_ui_codex_sdk").glob("*.py")),
               *sorted((ROOT / "ambient_runner" / "bridges" / "codex_sdk").glob("*.py"))]
    return shapes.names_read("\n".join(p.read_text() for p in sources))


def gemini_snapshot() -> dict[str, Any]:
    return {"acp": asyncio.run(_gemini_answers())}


async def _gemini_answers() -> dict[str, Any]:
    """``initialize`` and ``session/new`` of the live ``gemini --acp`` the bridge starts on the scripted model."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    import netns  # type: ignore[import-not-found]  # tests/support (put on sys.path above): loopback only

    problem = netns.isolate_network()
    if problem:
        raise SystemExit(f"cannot isolate the network: {problem}")
    from pydantic import ConfigDict

    from ag_ui_gemini_cli.acp_schema import AcpModel, NewSessionParams
    from ambient_runner.bridges.acp_client.live import CLIENT
    from ambient_runner.bridges.gemini_cli.bridge import GeminiCliBridge
    from ambient_runner.settings import RunnerSettings

    class Answer(AcpModel):  # any answer, every field kept
        model_config = ConfigDict(extra="allow")

    with tempfile.TemporaryDirectory(prefix="bump-gemini-") as tmp:
        root = Path(tmp)
        settings = RunnerSettings(runner_type="gemini-cli", workspace_path=root / "workspace",
                                  runner_state_root=root / "state", runner_scripted_model=True)
        settings.workspace_path.mkdir(parents=True)
        bridge = GeminiCliBridge(settings)
        await bridge.startup()
        try:
            connection = await bridge.live.connection()
            initialize = await connection.request("initialize", CLIENT, Answer, within=60)
            new = await connection.request("session/new", NewSessionParams(cwd=str(settings.workspace_path),
                                                                           mcp_servers=[]), Answer, within=60)
        finally:
            await bridge.shutdown()
    return {"initialize": initialize.model_dump(mode="json", by_alias=True),
            "session/new": new.model_dump(mode="json", by_alias=True)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.bump.snapshot")
    parser.add_argument("runner", choices=sorted(pins.RUNNERS))
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--fixtures", type=Path, help="claude: the recorded streams (default tests/fixtures/claude)")
    parser.add_argument("--codex-bin", help="codex-sdk: this binary instead of the pinned one")
    args = parser.parse_args(argv)
    if args.runner == "claude":
        snapshot = claude_snapshot(args.fixtures or FIXTURES / "claude")
    elif args.runner == "codex-sdk":
        snapshot = codex_snapshot(args.codex_bin)
    else:
        snapshot = gemini_snapshot()
    snapshot["clis"] = pins.cli_versions()
    args.out.write_text(json.dumps(snapshot, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
