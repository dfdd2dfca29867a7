"""Render the runner pod and Service for one agent session, the way the platform's operator does.

    python deploy/render.py --entry gemini-cli --session s1 [--image IMG] [--env NAME=VALUE ...] | kubectl apply -f -

From the agent registry (``agent-registry.json``, the ``ambient-agent-registry`` ConfigMap) and the pod template
(``runner-pod-template.yaml``) it builds, for the chosen entry:

* env: the template's env, ``SESSION_ID``, the session's ``AGUI_TOKEN`` secret (``<session>-runner-token``, key
  ``token``), then the entry's ``container.env`` (RUNNER_TYPE, RUNNER_STATE_DIR, RUNNER_DEFAULT_MODEL,
  RUNNER_MODELS), one ``secretKeyRef`` per ``auth.requiredSecretKeys`` name (``optional``: any one is enough), then
  the user's ``--env`` values, which replace earlier ones;
* the image: the entry's ``container.image`` (its runner's own image, ``ambient-runner-<runner>``), or ``--image``;
* names and labels: pod ``<session>-runner``, Service ``session-<session>`` selecting that pod only.

The user's env may not change the entry's RUNNER_TYPE or RUNNER_STATE_DIR, nor switch on the offline scripted
model. (The platform's own operator builds its pod from the same entry fields: ``container``, ``sandbox``,
``auth``; see the README's "Running on the ambient-code platform".)
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REGISTRY = HERE / "agent-registry.json"
POD_TEMPLATE = HERE / "runner-pod-template.yaml"
SERVICE = HERE / "service.yaml"
CREDENTIALS_SECRET = "ambient-runner-credentials"
SESSION_LABEL = "ambient-code.io/session"
AGENT_LABEL = "ambient-code.io/agent"
FORBIDDEN_USER_ENV = ("RUNNER_SCRIPTED_MODEL",)
SESSION_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,45}[a-z0-9])?$")  # "session-<id>" stays a DNS label


class RenderError(ValueError):
    """A bad entry, session name or env override; the message says which."""


def load_registry(path: Path = REGISTRY) -> list[dict[str, Any]]:
    return json.loads(path.read_text())


def load_yaml(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def find_entry(registry: list[dict[str, Any]], entry_id: str) -> dict[str, Any]:
    for entry in registry:
        if entry["id"] == entry_id:
            return entry
    raise RenderError(f"no agent-registry entry {entry_id!r}; entries: {', '.join(e['id'] for e in registry)}")


def _set_env(env: list[dict[str, Any]], item: dict[str, Any]) -> None:
    """Replace the variable in place (keeping its position for $(VAR) references) or append it."""
    for index, existing in enumerate(env):
        if existing["name"] == item["name"]:
            env[index] = item
            return
    env.append(item)


def session_env(entry: dict[str, Any], session: str, template_env: list[dict[str, Any]],
                user_env: dict[str, str], secret_name: str = CREDENTIALS_SECRET) -> list[dict[str, Any]]:
    internal = entry["internalEnvVars"]  # RUNNER_TYPE, RUNNER_STATE_DIR: what makes the entry this runner
    for name in user_env:
        if name in FORBIDDEN_USER_ENV:
            raise RenderError(f"{name} is never set in a deployed runner (the offline scripted model is for tests)")
        if name in internal:
            raise RenderError(f"{name} comes from the agent-registry entry {entry['id']!r} and cannot be overridden")
    env = copy.deepcopy(template_env)
    _set_env(env, {"name": "SESSION_ID", "value": session})
    _set_env(env, {"name": "AGUI_TOKEN", "valueFrom": {"secretKeyRef": {"name": f"{session}-runner-token",
                                                                         "key": "token"}}})
    for name, value in entry["container"]["env"].items():
        _set_env(env, {"name": name, "value": str(value)})
    for name in entry["auth"]["requiredSecretKeys"]:
        _set_env(env, {"name": name, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": name,
                                                                    "optional": True}}})
    for name, value in user_env.items():
        _set_env(env, {"name": name, "value": value})
    return env


def render_session(entry: dict[str, Any], session: str, *, template: dict[str, Any] | None = None,
                   service: dict[str, Any] | None = None, image: str | None = None,
                   user_env: dict[str, str] | None = None, namespace: str | None = None,
                   secret_name: str = CREDENTIALS_SECRET) -> list[dict[str, Any]]:
    """The Pod and the Service for one session of the given registry entry."""
    if not SESSION_NAME.match(session):
        raise RenderError(f"session {session!r} must be lowercase letters, digits and '-', at most 47 characters")
    template = copy.deepcopy(template or load_yaml(POD_TEMPLATE))
    service = copy.deepcopy(service or load_yaml(SERVICE))
    labels = {**template["template"]["metadata"].get("labels", {}), SESSION_LABEL: session, AGENT_LABEL: entry["id"]}
    spec = template["template"]["spec"]
    container = spec["containers"][0]
    container["env"] = session_env(entry, session, container.get("env", []), user_env or {}, secret_name)
    container["image"] = image or entry["container"]["image"]
    metadata: dict[str, Any] = {"name": f"{session}-runner", "labels": labels}
    if namespace:
        metadata["namespace"] = namespace
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
    service["metadata"] = {**metadata, "name": f"session-{session}"}
    service["spec"]["selector"] = {**service["spec"].get("selector", {}), SESSION_LABEL: session}
    return [pod, service]


def _parse_env(values: list[str]) -> dict[str, str]:
    env = {}
    for value in values:
        name, sep, val = value.partition("=")
        if not sep or not name:
            raise RenderError(f"--env takes NAME=VALUE (got {value!r})")
        env[name] = val
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the runner Pod and Service for one agent session.")
    parser.add_argument("--entry", required=True, help="agent-registry id: claude-agent-sdk, gemini-cli, codex-sdk")
    parser.add_argument("--session", required=True, help="the session id (a DNS label)")
    parser.add_argument("--image", help="the runner image (default: the entry's container.image)")
    parser.add_argument("--namespace")
    parser.add_argument("--secret-name", default=CREDENTIALS_SECRET, help="Secret holding the requiredSecrets keys")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="user env (repeatable)")
    parser.add_argument("--registry", type=Path, default=REGISTRY)
    parser.add_argument("--output", choices=("yaml", "json"), default="yaml")
    args = parser.parse_args(argv)
    try:
        entry = find_entry(load_registry(args.registry), args.entry)
        objects = render_session(entry, args.session, image=args.image, user_env=_parse_env(args.env),
                                 namespace=args.namespace, secret_name=args.secret_name)
    except RenderError as exc:
        print(f"render: {exc}", file=sys.stderr)
        return 2
    if args.output == "json":
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
    else:
        print(yaml.safe_dump_all(objects, sort_keys=False), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
