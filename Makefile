# Entry points of medpool, each a thin wrapper of a documented command (README.md, docs/running.md).
# `make help` lists them. Variables (override on the command line, e.g. `make run POOL=my_pool.yaml`):
#   POOL  the pool file                              (default: model_pool.yaml)
#   DATA  item files or folders, space-separated     (default: empty = the built-in demo suite)
#   OUT   the run folder of `make run` / `make pool` (default: empty = runs/<UTC timestamp>)
#   RUN   the run folder `make leaderboard` reads    (required there)
#   ARGS  more flags for the wrapped command, e.g. ARGS="--limit 20 --dry-run"
# The virtual environment must be active (`. .venv/bin/activate`); PYTHON names its interpreter.

PYTHON ?= python
POOL ?= model_pool.yaml
DATA ?=
OUT ?=
RUN ?=
ARGS ?=
EXTRAS ?= local,dev

DATA_FLAG = $(if $(DATA),--data $(DATA))
OUT_FLAG = $(if $(OUT),--out $(OUT))

.DEFAULT_GOAL := help
.PHONY: help install check test run pool pool-list subsets inventory leaderboard calibrate clean

help:
	@echo "medpool entry points (variables: POOL=$(POOL) DATA=$(or $(DATA),<demo suite>) OUT=$(or $(OUT),runs/<timestamp>) RUN=$(RUN) ARGS=$(ARGS))"
	@echo "  make install      scripts/install.sh $(EXTRAS)   (in the active virtual environment)"
	@echo "  make check        python -m pool.check --pool POOL [--data DATA]   the gate before a paid run; no judge call"
	@echo "  make test         python -m pytest -q"
	@echo "  make run          python -m pool.run --pool POOL [--data DATA] [--out OUT]   one run of the pool"
	@echo "  make pool         python -m pool.run --pool POOL --orchestration [--data DATA] [--out OUT]   the whole nightly run"
	@echo "  make pool-list    python -m pool.run --pool POOL --list --all   the pool's roster and its judge"
	@echo "  make subsets      python -m eval.subsets [--data DATA]   freeze subsets/{mini,medium,large}.yaml"
	@echo "  make inventory    python -m eval.inventory [--data DATA]   specialty coverage (broad area > system > domain)"
	@echo "  make leaderboard  python -m routing.build --run RUN   leaderboards, manifest and report of a run folder"
	@echo "  make calibrate    python -m pool.calibrate --pool POOL   the judge against labelled claims"
	@echo "  make clean        remove .pytest_cache/ and __pycache__/ (never runs/, the response cache or calibrations)"

install:
	scripts/install.sh $(EXTRAS)

check:
	$(PYTHON) -m pool.check --pool $(POOL) $(DATA_FLAG) $(ARGS)

test:
	$(PYTHON) -m pytest -q $(ARGS)

run:
	$(PYTHON) -m pool.run --pool $(POOL) $(DATA_FLAG) $(OUT_FLAG) $(ARGS)

pool:
	$(PYTHON) -m pool.run --pool $(POOL) --orchestration $(DATA_FLAG) $(OUT_FLAG) $(ARGS)

pool-list:
	$(PYTHON) -m pool.run --pool $(POOL) --list --all $(ARGS)

subsets:
	$(PYTHON) -m eval.subsets $(DATA_FLAG) $(ARGS)

inventory:
	$(PYTHON) -m eval.inventory $(DATA_FLAG) $(ARGS)

leaderboard:
	$(PYTHON) -m routing.build --run $(RUN) $(ARGS)

calibrate:
	$(PYTHON) -m pool.calibrate --pool $(POOL) $(ARGS)

clean:
	@echo "removing .pytest_cache/ and __pycache__/ folders; run folders (runs/), the response cache and the"
	@echo "judge calibrations are results that cost model calls: remove them by hand if you mean to"
	rm -rf .pytest_cache
	find . -path ./.venv -prune -o -type d -name __pycache__ -prune -exec rm -rf {} +
