"""The runner-level MCP configuration: parsing, validation, and what each CLI gets (no secret in any file)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from ambient_runner.mcp.config import McpConfigError, load_mcp_config, parse_mcp_config, parse_mcp_json, secret_values
from ambient_runner.mcp.naming import from_gemini, split_tool_name
from ambient_runner.mcp.render import claude_servers, codex_servers, gemini_servers
from ambient_runner.settings import SettingsError, load_settings

ENV = {"GH_TOKEN": "ghp-secret-value-123", "DOCS_TOKEN": "docs-secret-value-456", "SHORT": "1"}
CONFIG = {"mcpServers": {
    "github": {"command": "github-mcp", "args": ["stdio"], "cwd": "/opt/gh",
               "env": {"GH_TOKEN": "${GH_TOKEN}", "OTHER_API_KEY": "k-${DOCS_TOKEN}", "LOG": "debug"}},
    "docs": {"url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}",
                                                             "X-Team": "core", "X-Session": "${SHORT}"}},
    "legacy": {"type": "sse", "url": "https://old.example/sse"},
    "remote": {"httpUrl": "https://remote.example/mcp"},
}}


def parse(data: object) -> object:
    return parse_mcp_config(data, environ=ENV)


def test_the_common_shape_is_normalised() -> None:
    config = parse(CONFIG)
    assert {n: s.transport for n, s in config.servers.items()} == {
        "github": "stdio", "docs": "http", "legacy": "sse", "remote": "http"}
    assert config.servers["remote"].url == "https://remote.example/mcp"
    assert config.references() == ["GH_TOKEN", "DOCS_TOKEN", "SHORT"]
    assert secret_values(config, ENV) == ["ghp-secret-value-123", "docs-secret-value-456"]  # "1" is too short


@pytest.mark.parametrize(("data", "fragment"), [
    ([], "must be an object"),
    ({"servers": {}}, "must be an object"),
    ({"mcpServers": {"a__b": {"command": "x"}}}, "no '__'"),
    ({"mcpServers": {"bad name": {"command": "x"}}}, "letters, digits"),
    ({"mcpServers": {"a": {}}}, "needs command"),
    ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "choose one"),
    ({"mcpServers": {"a": {"command": "x", "unknown": 1}}}, "unknown"),
    ({"mcpServers": {"a": {"command": "x", "env": {"API_KEY": "plain-secret"}}}}, "looks like a credential"),
    ({"mcpServers": {"a": {"url": "http://h", "headers": {"Authorization": "Bearer abc"}}}}, "credential"),
    ({"mcpServers": {"a": {"command": "x", "env": {"V": "${NOT_SET_ANYWHERE}"}}}}, "NOT_SET_ANYWHERE"),
    ({"mcpServers": {"a": {"command": "x", "env": {"V": "${bad-name}"}}}}, "malformed reference"),
    ({"mcpServers": {"a": {"command": "x", "args": ["--token", "${GH_TOKEN}"]}}}, "env and headers values only"),
    ({"mcpServers": {"a": {"type": "stdio", "url": "http://h"}}}, "does not match"),
])
def test_bad_configurations_are_refused_with_the_server_named(data: object, fragment: str) -> None:
    with pytest.raises(McpConfigError, match=None) as caught:
        parse(data)
    assert fragment in str(caught.value)


def test_a_bad_config_stops_the_runner_at_start_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.setenv("MCP_SERVERS_JSON", '{"mcpServers": {"x": {"command": "a", "env": {"TOKEN": "s3cr3t"}}}}')
    with pytest.raises(SettingsError) as caught:
        load_settings(runner_state_root=tmp_path)
    line = str(caught.value)
    assert line.startswith("ambient-runner: invalid MCP_SERVERS_JSON: MCP server 'x'") and "\n" not in line
    assert "s3cr3t" not in line
    monkeypatch.setenv("MCP_SERVERS_JSON", "{not json")
    with pytest.raises(SettingsError, match="not valid JSON"):
        load_settings(runner_state_root=tmp_path)


def test_json_that_parses_but_is_refused_is_a_config_error() -> None:
    # json.loads raises a plain ValueError (no .msg/.lineno) for an integer over Python's digit limit
    with pytest.raises(McpConfigError, match="MCP_SERVERS_JSON is not valid JSON .*4300"):
        parse_mcp_json('{"s": {"command": "x", "timeout": ' + "1" * 5000 + "}}")


def test_a_missing_mcp_config_file_is_a_warning_not_a_failed_start(monkeypatch: pytest.MonkeyPatch,
                                                                   tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    """The platform's operator passes its own MCP_CONFIG_FILE into every pod; our image has no such file."""
    monkeypatch.setenv("MCP_CONFIG_FILE", str(tmp_path / "not-there.json"))
    settings = load_settings(runner_state_root=tmp_path)
    assert settings.mcp_config_file is None and settings.mcp_servers.servers == {}
    assert "not-there.json does not exist" in caplog.text
    (tmp_path / "broken.json").write_text("{not json")
    monkeypatch.setenv("MCP_CONFIG_FILE", str(tmp_path / "broken.json"))
    with pytest.raises(SettingsError, match="not valid JSON"):  # a file that is there but broken still stops it
        load_settings(runner_state_root=tmp_path)


def test_file_and_json_are_merged_json_wins(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(json.dumps({"mcpServers": {"a": {"command": "from-file"}, "b": {"command": "b"}}}))
    config = load_mcp_config(json.dumps({"mcpServers": {"a": {"command": "from-json"}}}), file, environ=ENV)
    assert {n: s.command for n, s in config.servers.items()} == {"a": "from-json", "b": "b"}


def test_gemini_keeps_references_for_the_cli_to_expand() -> None:
    servers = gemini_servers(parse(CONFIG))
    assert servers["github"] == {"command": "github-mcp", "args": ["stdio"], "cwd": "/opt/gh", "trust": True,
                                 "env": {"GH_TOKEN": "${GH_TOKEN}", "OTHER_API_KEY": "k-${DOCS_TOKEN}",
                                         "LOG": "debug"}}
    assert servers["docs"]["httpUrl"] == "https://docs.example/mcp"
    assert servers["legacy"] == {"url": "https://old.example/sse", "type": "sse", "trust": True}
    assert not any(v in json.dumps(servers) for v in ENV.values() if len(v) > 1)


def test_codex_forwards_variables_by_name_and_refuses_sse() -> None:
    config = parse({"mcpServers": {k: v for k, v in CONFIG["mcpServers"].items() if k != "legacy"}})
    rendered = codex_servers(config, ENV)
    toml = tomllib.loads("\n".join(rendered.lines))["mcp_servers"]
    asks = {"default_tools_approval_mode": "writes"}  # a tool not marked read-only asks the runner's gate
    assert toml["github"] == {"command": "github-mcp", "args": ["stdio"], "cwd": "/opt/gh",
                              "env": {"LOG": "debug"}, "env_vars": ["GH_TOKEN", "OTHER_API_KEY"], **asks}
    assert toml["docs"] == {"url": "https://docs.example/mcp", "bearer_token_env_var": "DOCS_TOKEN",
                            "http_headers": {"X-Team": "core"}, "env_http_headers": {"X-Session": "SHORT"}, **asks}
    assert rendered.passthrough == ["GH_TOKEN", "DOCS_TOKEN", "SHORT"]
    assert rendered.aliases == {"OTHER_API_KEY": "k-docs-secret-value-456"}  # process env only, not the file
    assert not any(v in "\n".join(rendered.lines) for v in ENV.values() if len(v) > 1)
    with pytest.raises(McpConfigError, match="not SSE"):
        codex_servers(parse(CONFIG), ENV)


def test_claude_gets_references_and_a_cwd_wrapper() -> None:
    servers = claude_servers(parse(CONFIG))
    assert servers["github"]["command"] == "/bin/sh"
    assert servers["github"]["args"] == ["-c", 'cd "$0" && exec "$@"', "/opt/gh", "github-mcp", "stdio"]
    assert servers["docs"] == {"type": "http", "url": "https://docs.example/mcp",
                               "headers": {"Authorization": "Bearer ${DOCS_TOKEN}", "X-Team": "core",
                                           "X-Session": "${SHORT}"}}
    assert servers["legacy"]["type"] == "sse"


def test_tool_names() -> None:
    assert from_gemini("mcp_echo_say", ["echo"]) == "mcp__echo__say"
    assert from_gemini("mcp_a_b_x", ["a", "a_b"]) == "mcp__a_b__x"
    assert from_gemini("run_shell_command", ["echo"]) == "run_shell_command"
    assert split_tool_name("mcp__echo__say") == ("echo", "say")
    assert split_tool_name("Bash") is None
