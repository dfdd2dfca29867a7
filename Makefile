# ambient-runner: `make run` serves the runner (offline on the built-in scripted model when no credentials are
# set), `make test` runs the tests. Everything installs from the project's own lock files: `make run` only what the
# runner and its terminal client need (`install-runtime`), `make test` / `make lint` everything (`install`).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUNNER_TYPE ?= gemini-cli
export RUNNER_TYPE

.PHONY: install install-runtime run client test test-fast test-slow lint bench bump image image-smoke deploy-render clean

# The runtime: the runner with every runner's SDK, the terminal client, the Gemini CLI (pyproject's `all` extra,
# each version as requirements.lock pins it). The development environment adds the test tools (the `test` extra),
# the official AG-UI TypeScript client and an MLflow server the tests start.
install-runtime: $(VENV)/.runtime node_modules/.installed

install: install-runtime $(VENV)/.installed tests/ts_client/node_modules/.installed .venv-mlflow/.installed

$(VENV)/.runtime: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -c requirements.lock -e ".[all]"
	touch $@

$(VENV)/.installed: $(VENV)/.runtime
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

.venv-mlflow/.installed: tests/mlflow_server/requirements.lock  # an MLflow tracking server, for the tracing tests
	$(PYTHON) -m venv .venv-mlflow
	.venv-mlflow/bin/python -m pip install --quiet --upgrade pip
	.venv-mlflow/bin/python -m pip install --quiet -r tests/mlflow_server/requirements.lock
	touch $@

tests/ts_client/node_modules/.installed: tests/ts_client/package.json tests/ts_client/package-lock.json
	npm ci --prefix tests/ts_client --no-audit --no-fund --loglevel=error  # the official AG-UI client, for tests
	touch $@

run: install-runtime  ## serve on 127.0.0.1:8001 (AGUI_HOST, AGUI_PORT); offline scripted model without credentials
	@$(VENV)/bin/ambient-runner serve --offline-if-no-credentials

client: install-runtime  ## the terminal client: make client ARGS='"Create out.txt with hello"'
	@$(VENV)/bin/ambient-runner run $(ARGS)

test: install  ## the whole suite (real CLIs run inside a loopback-only network namespace)
	$(PY) -m pytest -q

test-fast: install
	$(PY) -m pytest -q -m "not real_cli and not slow"

test-slow: install
	$(PY) -m pytest -q -m slow

lint: install  ## ruff, mypy, the layers and no import cycles (import-linter: pyproject's [tool.importlinter]), measures
	$(VENV)/bin/ruff check ambient_runner ag_ui_cli_common ag_ui_gemini_cli ag_ui_codex_sdk ag_ui_claude main.py tests deploy tools
	$(VENV)/bin/mypy  # the packages and main.py, as [tool.mypy] in pyproject.toml lists them
	$(VENV)/bin/lint-imports --no-cache --no-logo
	$(PY) -m tools.measures  # Any per 1,000 product lines <= 12, no product file over 450 lines (issue 47)

bump: install  ## take a CLI release: make bump RUNNER=claude [VERSION=0.2.190] (docs/development.md#taking-a-cli-release)
	$(PY) -m tools.bump $(RUNNER) $(VERSION)

image:  ## build the images (one per runner, and the all-in-one) with buildah as root, no Docker engine: deploy/image/build.sh
	bash deploy/image/build.sh

image-smoke:  ## each image: size budget, a run per runner on the offline scripted model (loopback only), cold start
	bash deploy/image/smoke.sh

deploy-render: install  ## the kustomize base as the cluster gets it (SESSION=s1 ENTRY=gemini-cli: one session's pod)
	@if [ -n "$(SESSION)" ]; then $(PY) deploy/render.py --entry $(or $(ENTRY),$(RUNNER_TYPE)) --session $(SESSION); \
	else $(VENV)/bin/kubectl kustomize deploy; fi

bench: install  ## benchmarks (not tests): writes docs/benchmarks.md and its plots; loopback-only netns, needs root
	$(PY) -m pip install --quiet -r bench/requirements.txt
	$(PY) bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .venv-mlflow node_modules tests/ts_client/node_modules .pytest_cache
