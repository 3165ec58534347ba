# autoroll developer entry points. `make test` is what CI runs (.ci/run).
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOOLS_ENV := .tools/env
# Every recipe sees the pinned tools (helm v4, helm-unittest, actionlint, ...).
WITH_TOOLS = source $(TOOLS_ENV) &&

.PHONY: help tools tools-core tools-gitea venv test lock-aarch64 lint typecheck pytest pytest-e2e pytest-rest chart-lint chart-test docs names demo bench bench-loaded bench-giant clean \
	lock lock-upgrade test-lowest image release-chart mutants

help:
	@echo "make demo    - watch autoroll replace 3 real containers one at a time on a local cluster"
	@echo "               (DEMO_ARGS=--once: one roll, then tear down and exit)"
	@echo "make names   - preview the Job names for examples/jobs-values.yaml (jobhash)"
	@echo "make bench   - run the benchmarks quietly (about 30 min) and rewrite docs/performance.md"
	@echo "make bench-loaded - the same beside stress-ng (BENCH_LOAD_CPUS=8), side by side with make bench's"
	@echo "make bench-giant - the 50,000-Deployment size alone (about 30 min, 13 GB), merged into the page"
	@echo "make mutants - mutation testing of the core's decisions and jobhash's names (kill rate)"
	@echo "make test    - install the tools and run every suite (what CI runs)"
	@echo "make tools   - build/install helm, helm-unittest, actionlint, helm-docs, docker-registry, the control plane"
	@echo "make tools-gitea - also build Gitea and install skopeo (the tests/gitea tier)"
	@echo "make docs    - regenerate the chart README's values table (helm-docs)"
	@echo "make image   - build the controller image with podman, as CI does (scripts/tools.sh image)"
	@echo "make lock    - re-resolve requirements/*.txt after a dependency change (lock-upgrade: newest)"
	@echo "make lock-aarch64 - check every runtime pin has an aarch64 wheel (part of make test)"
	@echo "make release-chart - package the chart into tests/e2e/releases for a new version (before tagging)"

# Everything the suites need, including the local control plane (etcd, kube-apiserver,
# kube-controller-manager) and the node (kubelet, kube-proxy, CoreDNS, containerd, runc, CNI
# plugins, busybox) that the end-to-end tests and the demo run.
tools $(TOOLS_ENV): scripts/tools.sh scripts/versions.env
	scripts/tools.sh all

# Only what the chart and unit suites need (helm, helm-unittest, actionlint, helm-docs,
# docker-registry).
tools-core:
	scripts/tools.sh core

# The live Forgejo-family server tier (tests/gitea): Gitea and skopeo, on top of `tools`.
# Kept out of `tools` so `make demo` never waits for the Gitea build.
tools-gitea: tools
	scripts/tools.sh gitea

# The dev venv installs the hashed lock (the runtime pins are the image's own), exactly as
# the Dockerfile does (--no-deps: the lock is the whole set, LOCK_OMIT left out on purpose;
# tests/unit/test_dependencies.py checks nothing else is missing), then the project itself.
$(VENV)/.installed: pyproject.toml requirements/dev.txt
	$(PYTHON) -m venv --clear $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes --no-deps -r requirements/dev.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
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

# The same suites in two parts, for `make test` to run side by side. The e2e tier runs on
# E2E_WORKERS pytest-xdist workers, each with its own control plane and node (tests/e2e/
# README.md, "Workers"); a file's tests stay on one worker (--dist loadfile), the
# longest files first (tests/e2e/conftest.py). E2E_WORKERS=0: one process, as before.
E2E_WORKERS ?= 4
# `make test` sets it to `nice -n 10` for the suites that run beside the e2e tier.
REST_NICE ?=
pytest-e2e: venv $(TOOLS_ENV)
	$(WITH_TOOLS) $(BIN)/pytest $(PYTEST_ARGS) $(if $(filter-out 0,$(E2E_WORKERS)),-n $(E2E_WORKERS) --dist loadfile --no-loadscope-reorder) tests/e2e

pytest-rest: venv $(TOOLS_ENV)
	$(WITH_TOOLS) $(REST_NICE) $(BIN)/pytest $(PYTEST_ARGS) --ignore=tests/e2e

chart-lint: $(TOOLS_ENV)
	$(WITH_TOOLS) helm lint --strict charts/autoroll -f examples/values-minimal.yaml && helm lint --strict charts/autoroll -f examples/values-production.yaml

chart-test: $(TOOLS_ENV)
	$(WITH_TOOLS) helm unittest --strict charts/autoroll

# The values table in charts/autoroll/README.md, from the `# --` comments in values.yaml.
docs: $(TOOLS_ENV)
	$(WITH_TOOLS) scripts/chart_docs.sh

# The chart as users get it, for the upgrade tests of the next releases: `helm package` of
# charts/autoroll into tests/e2e/releases (as autoroll-<version>.tgz). Run it when Chart.yaml's
# version changes, before tagging v<version>; an existing package is never overwritten.
release-chart: $(TOOLS_ENV)
	@version=$$(sed -n 's/^version: *//p' charts/autoroll/Chart.yaml | tr -d '"'); \
	target=tests/e2e/releases/autoroll-$$version.tgz; \
	if [ -e "$$target" ]; then echo "release-chart: $$target exists; bump version in charts/autoroll/Chart.yaml first"; exit 1; fi; \
	$(WITH_TOOLS) helm package charts/autoroll -d tests/e2e/releases >/dev/null && echo "release-chart: wrote $$target (commit it)"

workflow-lint: $(TOOLS_ENV)
	$(WITH_TOOLS) if compgen -G '.forgejo/workflows/*.y*ml' >/dev/null; then actionlint .forgejo/workflows/*.y*ml; fi

# The runtime lock installs on arm64 nodes: every pin has a wheel for the published image's
# interpreter (the Dockerfile's base, CPython 3.12) on aarch64, hashes checked. The arm64
# image accepts wheels only, so a pin without one would break only the release build; this
# catches it in every `make test` and in the workflow's test job. Warm (pip's cache): ~5 s.
LOCK_PLATFORM_PYTHON = 3.12
lock-aarch64: venv
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	  $(BIN)/python -m pip download --quiet --disable-pip-version-check --no-deps \
	    --only-binary :all: --require-hashes --implementation cp \
	    --python-version $(LOCK_PLATFORM_PYTHON) \
	    --platform manylinux2014_aarch64 --platform manylinux_2_28_aarch64 \
	    -r requirements/runtime.txt -d "$$tmp" && \
	  echo "lock-aarch64: $$(ls "$$tmp" | wc -l) wheels of requirements/runtime.txt for cp$(LOCK_PLATFORM_PYTHON) aarch64"

# The README's test command: tools first, the linters, then every suite. The e2e tier mostly
# waits (pods start, passes and polls come round), so it runs on E2E_WORKERS=4 workers beside
# the other suites, and those run at a lower CPU priority (REST_NICE): they only need
# throughput, while the e2e tier's waits have deadlines, so it takes the CPU first and the
# other suites fill the time it spends waiting. Two test runs at a time (-j2: the e2e tier
# beside the other suites, then the lowest tier in the first free slot); each one's output is
# printed whole when it ends (--output-sync).
test: tools tools-gitea venv lint typecheck chart-lint chart-test workflow-lint lock-aarch64
	@echo "make test: the e2e tier ($(E2E_WORKERS) workers), the other suites and the lowest-bounds tier"
	@echo "           (both niced), two at a time; each prints its output when it ends"
	$(MAKE) --no-print-directory -j2 --output-sync=target REST_NICE="nice -n 10" \
	  pytest-e2e pytest-rest test-lowest

# The declared lower bounds, tested: a second venv with the lowest version pyproject.toml
# allows of every direct dependency (transitive ones newest), and the unit and integration
# tiers run against it. tests/unit/test_dependencies.py checks they really are the floors.
# The jobhash/helm parity property runs 100 examples here (300 in the locked tier): it is the
# YAML and schema libraries at their floors that this tier is about.
LOWEST := .venv-lowest
test-lowest: export JOBHASH_PARITY_EXAMPLES = 100
test-lowest: $(TOOLS_ENV)
	$(WITH_TOOLS) uv venv --quiet --seed --clear --python $(PYTHON) $(LOWEST)
	@# --seed brings pip (the wheel test runs `pip wheel`); the newest setuptools, wheel and
	@# packaging it brings along must go, or they would stand in for the floors.
	$(WITH_TOOLS) uv pip uninstall --quiet --python $(LOWEST)/bin/python setuptools wheel packaging
	$(WITH_TOOLS) uv pip install --quiet --python $(LOWEST)/bin/python --resolution lowest-direct -e '.[test]'
	$(WITH_TOOLS) AUTOROLL_EXPECT_LOWEST=1 $(REST_NICE) $(LOWEST)/bin/python -m pytest -q $(LOWEST_PYTEST_ARGS) tests/unit tests/integration

# The hashed lock from pyproject.toml: runtime.txt (the image), dev.txt (the dev venv and
# CI: runtime pins + test + lint), build.txt (the Dockerfile's build backend). `make lock`
# keeps every pin it can; `make lock-upgrade` moves each to the newest allowed.
# LOCK_OMIT: what kubernetes >= 36 requires for kubernetes.aio only, which autoroll never
# imports (the image deletes it): left out, so no venv of ours has it and an import of
# kubernetes.aio fails every suite (docs/adr/013-image-and-dependencies.md).
LOCK_OMIT = aiohttp aiohttp-retry aiohappyeyeballs aiosignal frozenlist multidict propcache yarl
LOCK_FLAGS = --quiet --universal --python-version 3.11 --generate-hashes --custom-compile-command 'make lock' \
	$(addprefix --no-emit-package ,$(LOCK_OMIT))
lock lock-upgrade: $(TOOLS_ENV)
	$(WITH_TOOLS) uv pip compile $(LOCK_FLAGS) $(LOCK_UPGRADE) pyproject.toml -o requirements/runtime.txt
	$(WITH_TOOLS) uv pip compile $(LOCK_FLAGS) $(LOCK_UPGRADE) --extra test --extra lint \
	  --constraint requirements/runtime.txt pyproject.toml -o requirements/dev.txt
	$(WITH_TOOLS) uv pip compile $(LOCK_FLAGS) $(LOCK_UPGRADE) \
	  --constraint requirements/dev.txt requirements/build.in -o requirements/build.txt
lock-upgrade: LOCK_UPGRADE = --upgrade

# The controller image as CI builds it: podman, the Debian base from scripts/tools.sh image,
# the committed Dockerfile. Prints the image name and the OCI archive (cached by content).
image: $(TOOLS_ENV) venv
	$(WITH_TOOLS) $(BIN)/python -m tests.support.image

# The README's first command: a local control plane and node, a registry, a 3-replica enrolled app, a
# new :latest pushed, and autoroll rolling it pod by pod, live. Enter pushes again; Ctrl-C
# tears everything down. `make demo DEMO_ARGS=--once` rolls once and exits (0: roll complete).
demo: tools venv
	$(WITH_TOOLS) $(BIN)/python scripts/demo.py $(DEMO_ARGS)

names: venv
	$(BIN)/jobhash names --release demo -f examples/jobs-values.yaml

# Issue 8: tick cost at scale, push-to-deletion, webhook under load, jobhash vs helm, each
# next to a naive baseline. `make bench` is the quiet run: every size below 10,000
# (--smaller), then the 10,000 size (--largest), merged into docs/performance.md and
# bench/results.json (about 30 min on 2 idle cores). `make bench-loaded` (issue 28) runs the
# same pair beside `stress-ng --cpu $(BENCH_LOAD_CPUS)` (a bounded CPU load with a time limit)
# and renders both side by side, each with its load average: run it after `make bench`.
# BENCH_ARGS=--quick for the small sizes CI runs instead (a few minutes, prints the report).
# The controller's processes run on $(RUNTIME_VENV): the image's lock only, so their memory
# is the image's (bench/child.py, CONTROLLER_PYTHON_ENV); the bench's own code runs on $(BIN).
BENCH_RUNS := bench/runs
BENCH_LOAD_CPUS ?= 8
RUNTIME_VENV := .venv-runtime
WITH_RUNTIME = AUTOROLL_BENCH_PYTHON=$(CURDIR)/$(RUNTIME_VENV)/bin/python
$(RUNTIME_VENV)/.installed: requirements/runtime.txt
	$(PYTHON) -m venv --clear $(RUNTIME_VENV)
	$(RUNTIME_VENV)/bin/python -m pip install --quiet --require-hashes --no-deps -r requirements/runtime.txt
	touch $@

# The 50,000-Deployment size takes half an hour and about 13 GB for the API server and etcd
# on its own, so it is a run of its own (make bench-giant); once it has run, the merges take
# its largest row (bench.merge --giant-from), and the report says which run measured it.
GIANT_SIZE ?= 50000
GIANT_FROM = $(if $(wildcard $(BENCH_RUNS)/quiet-giant.json),--giant-from $(BENCH_RUNS)/quiet-giant.json)

bench: tools venv $(RUNTIME_VENV)/.installed
ifeq ($(strip $(BENCH_ARGS)),)
	mkdir -p $(BENCH_RUNS)
	$(WITH_TOOLS) $(WITH_RUNTIME) $(BIN)/python -m bench.run --smaller --json $(BENCH_RUNS)/quiet-smaller.json
	$(WITH_TOOLS) $(WITH_RUNTIME) $(BIN)/python -m bench.run --largest --json $(BENCH_RUNS)/quiet-largest.json
	$(BIN)/python -m bench.merge $(BENCH_RUNS)/quiet-smaller.json $(BENCH_RUNS)/quiet-largest.json $(GIANT_FROM)
else
	$(WITH_TOOLS) $(BIN)/python -m bench.run $(BENCH_ARGS)
endif

bench-loaded: tools venv $(RUNTIME_VENV)/.installed
	@test -f $(BENCH_RUNS)/quiet-largest.json || { echo "bench-loaded: run make bench first (the quiet run)"; exit 1; }
	scripts/tools.sh bench
	$(WITH_TOOLS) $(WITH_RUNTIME) $(BIN)/python -m bench.run --smaller --load-cpus $(BENCH_LOAD_CPUS) --json $(BENCH_RUNS)/loaded-smaller.json
	$(WITH_TOOLS) $(WITH_RUNTIME) $(BIN)/python -m bench.run --largest --load-cpus $(BENCH_LOAD_CPUS) --json $(BENCH_RUNS)/loaded-largest.json
	$(BIN)/python -m bench.merge $(BENCH_RUNS)/quiet-smaller.json $(BENCH_RUNS)/quiet-largest.json \
	  $(GIANT_FROM) --loaded $(BENCH_RUNS)/loaded-smaller.json $(BENCH_RUNS)/loaded-largest.json

bench-giant: tools venv $(RUNTIME_VENV)/.installed
	@test -f $(BENCH_RUNS)/quiet-smaller.json || { echo "bench-giant: run make bench first (the quiet run)"; exit 1; }
	$(WITH_TOOLS) $(WITH_RUNTIME) $(BIN)/python -m bench.run --largest --giant $(GIANT_SIZE) --json $(BENCH_RUNS)/quiet-giant.json
	$(BIN)/python -m bench.merge $(BENCH_RUNS)/quiet-smaller.json $(BENCH_RUNS)/quiet-largest.json \
	  --giant-from $(BENCH_RUNS)/quiet-giant.json $(if $(wildcard $(BENCH_RUNS)/loaded-largest.json),--loaded $(BENCH_RUNS)/loaded-smaller.json $(BENCH_RUNS)/loaded-largest.json)

# Mutation testing (issue 27): mutmut mutates the core's decision and guardrail modules and
# jobhash's names and Go JSON ([tool.mutmut] in pyproject.toml lists them and the unit tests
# that guard them) and reports the kill rate per module. Not part of `make test` nor of CI:
# the whole set is about 2,800 mutants and takes hours on 2 cores (health.py's reach the
# property tests, over a minute each), so run it when a rule in one of those modules
# changes, for that module (MUTANTS='autoroll.core.kinds.*', mutmut's names), and whole
# before a release. It resumes where it stopped; `rm -rf mutants` starts afresh. Which tests
# reach which function is measured again on every run (mutmut keeps it in
# mutants/mutmut-stats.json and adds only new tests to it): a function added or moved since
# would otherwise count as "no tests" while its tests kill every mutant of it.
MUTANTS ?=
mutants: venv
	@echo "make mutants: mutmut run $(MUTANTS) (progress in mutants-run.log), then the kill rate"
	rm -f mutants/mutmut-stats.json
	$(BIN)/mutmut run --max-children 2 $(MUTANTS) > mutants-run.log 2>&1 || { tail -c 3000 mutants-run.log; exit 1; }
	$(BIN)/python scripts/mutants_report.py

clean:
	rm -rf $(VENV) $(LOWEST) $(RUNTIME_VENV) .tools .mypy_cache .pytest_cache .ruff_cache .hypothesis mutants mutants-run.log
