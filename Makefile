# The two commands of the README (make run, make test), and the docs site (make docs).
# `uv` is installed with pip when it is missing.
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
PORT ?= 8080

.PHONY: run test test-machine k8s-binaries bench docs docs-serve uv sync

run: docs ## install from the lock file, build the docs, start Airflow, run the 2-node demo, keep Airflow up
	$(UV) run octotrain up --port $(PORT)

test: sync test-machine k8s-binaries ## lint, check the layering, run the whole test suite (SQLite and PostgreSQL)
	$(UV) run ruff check .
	$(UV) run ruff format --check .
	$(UV) run lint-imports
	$(MKDOCS) build --quiet
	$(UV) run pytest

# The docs site (docs/, mkdocs.yml), offline; strict: a broken link or anchor fails the build.
MKDOCS := NO_MKDOCS_2_WARNING=1 $(UV) run mkdocs
docs: sync ## build the docs site into site/
	$(MKDOCS) build

docs-serve: sync ## serve the docs site on http://127.0.0.1:8000, rebuilt as pages change
	$(MKDOCS) serve --dev-addr 127.0.0.1:8000

bench: sync ## the benchmarks of bench/, each printing ratios to a baseline of the same run
	$(UV) run python -m bench.cli
	$(UV) run python -m bench.lists
	$(UV) run python -m bench.task_create
	$(UV) run python -m bench.staging
	$(UV) run python -m bench.checkpoint
	$(UV) run python -m bench.pods
	$(UV) run python -m bench.logs
	$(UV) run python -m bench.charts
	$(UV) run python -m bench.extract
	$(UV) run python -m bench.trigger
	$(UV) run python -m bench.load
	$(UV) run python -m bench.sweep

# PostgreSQL, Redis, chromium, Ceph's S3 gateway and docker-compose: installed and started when missing.
test-machine:
	bash tools/test_machine.sh

# The real Kubernetes control plane of the tests (tests/k8s_control_plane.py), built from Go
# modules once per machine into ~/.cache/octotrain/ (a cold build: about 13 min on 2 cores).
k8s-binaries:
	bash tools/k8s/build.sh k8s etcd kueue >/dev/null

# Compiled once here, every module's bytecode spares each command its compile at every start
# (3 s of CPU before `octotrain --help` where PYTHONDONTWRITEBYTECODE is set: bench.cli).
sync: uv plugins/ui/node_modules/.package-lock.json
	$(UV) sync --frozen --compile-bytecode
	$(UV) run python -m compileall -q -j 0 octotrain hooks cli dags operators plugins agent

# The pages' front-end packages (ECharts), pinned by the lock file, served by the plugin.
plugins/ui/node_modules/.package-lock.json: plugins/ui/package-lock.json
	npm ci --prefix plugins/ui --no-audit --no-fund --loglevel=error

uv:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || \
		python3 -m pip install --quiet "uv==0.13.8"
