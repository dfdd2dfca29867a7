"""Well-known credential shapes are redacted wherever the runner's redactor runs (events, log records, spans),
whether or not the runner knows the value; ordinary text that looks a little like one is untouched; secrets added
later (a fetched token) are redacted from then on by the same redactor object."""

from __future__ import annotations

import json
import logging

import pytest
from ag_ui.core import TextMessageContentEvent

from ambient_runner.logging_setup import install_redaction
from ambient_runner.stream.encoding import REDACTED, Redactor, event_json

SHAPES = {
    "github classic": "ghp_" + "a1B2c3D4e5" * 3 + "F6g7H8",
    "github oauth": "gho_" + "Z" * 36,
    "github user-to-server": "ghu_" + "9" * 36,
    "github server-to-server": "ghs_" + "x" * 36,
    "github refresh": "ghr_" + "Q" * 76,
    "github fine-grained": "github_pat_11ABCDEFG0" + "a" * 72,
    "gitlab": "glpat-" + "AbCdEfGhIjKlMnOpQrSt",
    "anthropic": "sk-ant-api03-" + "k" * 93,
    "openai project": "sk-proj-" + "P" * 48,
    "openai legacy": "sk-" + "T3BlbkFJ" * 6,
    "google api key": "AIza" + "SyD-" + "w" * 31,
    "slack bot": "xoxb-123456789012-1234567890123-abcdefABCDEF",
    "slack user": "xoxp-1234567890-abc",
    "aws access key": "AKIA" + "IOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJzdWIiOiJzeXN0ZW06c2EiLCJleHAiOjF9.c2lnbmF0dXJlLXZhbHVlLTEyMw",
}
ORDINARY = ["sk-learn is scikit-learn", "a risk-free task-list", "ghp_ is GitHub's prefix", "AKIA is short",
            "AIzaSy", "xoxb-123", "glpat-short", "authorization: basic", "the Bearer of news",
            "-----BEGIN CERTIFICATE-----", "sk-ant-short", "desk-lamp and disk-usage", "eyJhbGci alone"]


@pytest.mark.parametrize("name", SHAPES)
def test_each_shape_is_redacted_in_text_and_in_json(name):
    token = SHAPES[name]
    redact = Redactor()
    assert redact(f"found {token} here") == f"found {REDACTED} here"
    event = TextMessageContentEvent(message_id="m", delta=f"echo {token}\n")
    wire = event_json(event, redact)
    assert token not in wire and REDACTED in wire
    json.loads(wire)  # still valid JSON


def test_ordinary_text_is_untouched():
    redact = Redactor()
    for text in ORDINARY:
        assert redact(text) == text


def test_bearer_lines_keep_their_scheme_and_private_keys_go_whole():
    redact = Redactor()
    assert redact("Authorization: Bearer eyJhbGciOi.payload.sig") == f"Authorization: Bearer {REDACTED}"
    assert redact('curl -H "authorization: token abcdef123456"') == f'curl -H "authorization: token {REDACTED}"'
    header = json.dumps({"headers": {"Authorization": "Bearer s3cr3t-v4lue-xyz"}})
    assert "s3cr3t" not in redact(header)
    block = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----"
    assert redact(f"key:\n{block}\ndone") == f"key:\n{REDACTED}\ndone"
    escaped = json.dumps({"delta": block})  # as it is inside an event: newlines escaped
    assert "b3BlbnNzaC1rZXk" not in redact(escaped)
    cut = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA"  # a block cut short in one event
    assert "MIIEpAIBAAKCAQEA" not in redact(cut)


def test_secrets_added_later_are_redacted_by_the_same_object(caplog):
    redact = Redactor(["first-secret-value"])
    uninstall = install_redaction(redact)
    try:
        redact.extend(["fetched-token-later", "short"])
        with caplog.at_level(logging.INFO):
            logging.getLogger("test.redaction").info("tool printed %s and %s", "fetched-token-later",
                                                    "first-secret-value")
        assert "fetched-token-later" not in caplog.text and "first-secret-value" not in caplog.text
        assert redact("short stays") == "short stays"  # below the minimum length: not a secret
        assert redact('{"a":"fetched-token-later"}') == '{"a":"[REDACTED]"}'
    finally:
        uninstall()


def test_a_secret_a_shape_covers_does_not_lengthen_the_list():
    redact = Redactor()
    github = SHAPES["github server-to-server"]
    redact.extend([github, "jira-api-token-value"])
    assert redact(f"{github} jira-api-token-value") == f"{REDACTED} {REDACTED}"
    assert redact._secrets == {"jira-api-token-value"}
