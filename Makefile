# autoroll developer entry points. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOLS_ENV := .tools/env
# Every recipe sees the pinned tools (helm v4, helm-unittest, actionlint, ...).
WITH_TOOLS = source $(TOOLS_ENV) &&

.PHONY: help tools tools-core tools-gitea venv test lint typecheck pytest chart-lint chart-test names demo bench clean

help:
	@echo "make demo    - watch autoroll replace 3 real containers one at a time on a local cluster"
	@echo "               (DEMO_ARGS=--once: one roll, then tear down and exit)"
	@echo "make names   - preview the Job names for examples/jobs-values.yaml (jobhash)"
	@echo "make bench   - run the benchmarks (about 10 min) and rewrite docs/performance.md"
	@echo "make test    - install the tools and run every suite (what CI runs)"
	@echo "make tools   - build/install helm, helm-unittest, actionlint, docker-registry, the control plane"
	@echo "make tools-gitea - also build Gitea and install skopeo (the tests/gitea tier)"

# Everything the suites need, including the local control plane (etcd, kube-apiserver,
# kube-controller-manager) and the node (kubelet, containerd, runc, CNI plugins, busybox) that
# the end-to-end tests and the demo run.
tools $(TOOLS_ENV): scripts/tools.sh scripts/versions.env
	scripts/tools.sh all

# Only what the chart and unit suites need (helm, helm-unittest, actionlint, docker-registry).
tools-core:
	scripts/tools.sh core

# The live Forgejo-family server tier (tests/gitea): Gitea and skopeo, on top of `tools`.
# Kept out of `tools` so `make demo` never waits for the Gitea build.
tools-gitea: tools
	scripts/tools.sh gitea

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

venv: $(VENV)/.installed

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	if grep -q '^\[tool.importlinter\]' pyproject.toml; then $(BIN)/lint-imports; fi

typecheck: venv
	$(BIN)/mypy

pytest: venv $(TOOLS_ENV)
	$(WITH_TOOLS) $(BIN)/pytest $(PYTEST_ARGS)

chart-lint: $(TOOLS_ENV)
	$(WITH_TOOLS) helm lint --strict charts/autoroll -f examples/values-minimal.yaml && helm lint --strict charts/autoroll -f examples/values-production.yaml

chart-test: $(TOOLS_ENV)
	$(WITH_TOOLS) helm unittest --strict charts/autoroll

workflow-lint: $(TOOLS_ENV)
	$(WITH_TOOLS) if compgen -G '.forgejo/workflows/*.y*ml' >/dev/null; then actionlint .forgejo/workflows/*.y*ml; fi

# The README's test command: tools first, then every suite. Stops at the first failure.
test: tools tools-gitea venv lint typecheck chart-lint chart-test workflow-lint pytest

# The README's first command: a local control plane and node, a registry, a 3-replica enrolled app, a
# new :latest pushed, and autoroll rolling it pod by pod, live. Enter pushes again; Ctrl-C
# tears everything down. `make demo DEMO_ARGS=--once` rolls once and exits (0: roll complete).
demo: tools venv
	$(WITH_TOOLS) $(BIN)/python scripts/demo.py $(DEMO_ARGS)

names: venv
	$(BIN)/jobhash names --release demo -f examples/jobs-values.yaml

# Issue 8: tick cost at scale, push-to-deletion, webhook under load, jobhash vs helm, each
# next to a naive baseline. BENCH_ARGS=--quick for the small sizes CI runs (under 2 min).
bench: tools venv
	$(WITH_TOOLS) $(BIN)/python -m bench.run $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .tools .mypy_cache .pytest_cache .ruff_cache .hypothesis
