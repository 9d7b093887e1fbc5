# Two commands set everything up on a fresh machine: `make run` and `make test`.
VENV     := .venv
BIN      := $(VENV)/bin
PORT     ?= 8000

.PHONY: run test test-pcluster bench chaos lint messages makemessages clean venv docs

# The virtualenv is rebuilt whenever a requirements file changes.
$(BIN)/.installed: requirements.txt requirements-dev.txt
	@PY=$$(scripts/find-python) || exit 1; \
	  [ -x $(BIN)/python ] || { echo "Creating $(VENV) with $$PY"; "$$PY" -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

venv: $(BIN)/.installed

# Compiles the shipped translations (.po -> .mo) with polib: needs no system gettext.
messages: $(BIN)/.installed
	$(BIN)/python manage.py compiletranslations

run: $(BIN)/.installed messages
	PORT=$(PORT) scripts/run-embedded

test: $(BIN)/.installed messages
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# ParallelCluster's optional library (requirements-pcluster.txt) in a virtualenv of its own: aws-parallelcluster
# brings ~75 packages (AWS CDK v1, jsii, which needs Node.js >= 18) and pins packaging to 25.x, so it stays out of
# .venv. `make test` skips the tests that need it; this runs them (and the rest of their file) with it installed.
PCLUSTER_VENV := .venv-pcluster
$(PCLUSTER_VENV)/bin/.installed: requirements.txt requirements-dev.txt requirements-pcluster.txt
	@PY=$$(scripts/find-python) || exit 1; \
	  [ -x $(PCLUSTER_VENV)/bin/python ] || { echo "Creating $(PCLUSTER_VENV) with $$PY"; "$$PY" -m venv $(PCLUSTER_VENV); }
	$(PCLUSTER_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
	  -r requirements-pcluster.txt -r requirements-dev.txt
	@touch $@

test-pcluster: $(PCLUSTER_VENV)/bin/.installed
	$(PCLUSTER_VENV)/bin/python -m pytest tests/cloud/test_parallelcluster.py $(PYTEST_ARGS)

# Every benchmark, then one table of its figures, goals and verdicts. BENCH_ARGS="--readme" also rewrites the
# benchmark tables in docs/ (docs/operations/benchmarks.md) from this run; BENCH_ARGS="--tiny" checks that each
# still runs (what CI does).
bench: $(BIN)/.installed messages
	$(BIN)/python -m bench $(BENCH_ARGS)

# The production shape on services of its own (PostgreSQL, Redis, an AWS emulator behind a proxy), faults at
# random for MINUTES (default 10; SEED=n reproduces a schedule, FAULTS=n sets how many): prints what held and
# exits 1 when a goal is missed. Stops by itself and leaves no process or folder behind.
chaos: $(BIN)/.installed messages
	MINUTES=$(or $(MINUTES),10) SEED=$(or $(SEED),1) $(BIN)/python scripts/chaos.py

# The documentation site (mkdocs.yml, docs/) into var/site: --strict fails on a broken link or anchor, as
# tests/test_docs.py does in `make test`. Open var/site/index.html.
docs: $(BIN)/.installed
	$(BIN)/mkdocs build --strict --site-dir var/site

lint: $(BIN)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf var/ .pytest_cache

# Re-extract translatable strings into the .po catalogs (needs GNU gettext: apt-get install gettext).
# Each app keeps its own catalog (<app>/locale); locale/ holds the base layout and portal strings.
makemessages: $(BIN)/.installed
	$(BIN)/python manage.py makemessages -l ja --no-obsolete --ignore=.venv --ignore=.venv-pcluster --ignore=var --ignore=tenants --ignore=workloads --ignore=tests --ignore=bench
	for app in tenants workloads; do (cd $$app && mkdir -p locale && $(abspath $(BIN))/python ../manage.py makemessages -l ja --no-obsolete); done
