# The chaos lab for LLM chat memory. Every target sets up what it needs first (idempotent).
#   make chaos   the main job: the defect x fault matrix on the native stack (MODE=compose)
#   make test    the test suite (unit, integration, e2e) on the real stack
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
LAB := $(PY) -m lab
PYTEST_ARGS ?=
# make test runs the suite in JOBS pytest-xdist workers side by side (it mostly waits: TTLs,
# latencies, restarts -- with 2 workers the 2 cores were 43 % busy: 20 CPU-minutes in 23.5 minutes;
# 3 workers took the same run to about 15 minutes; on 2026-12-06 the suite took 20 m 04 s on 3
# workers, 17 m 19 s on 4, the cores 48 % and 52 % busy; 5 made every e2e test 25 % slower, no
# gain: docs/figures.md); tests that share one
# run (a module's fixture, the Docker engine) stay in one.
JOBS ?= 4
XDIST := -n $(JOBS)
MODE ?= native

.PHONY: help setup venv system toxiproxy node go docker lint test test-unit test-integration test-loaded up down status chaos window soak storm bench lesson investigate suspects merge k8s k8s-check clean

help:
	@echo "make chaos    run the chaos matrix (native stack; MODE=compose on Docker Compose; MODEL=1: replies from the stand-in model)"
	@echo "make test     set up, lint + type-check (make lint), and run the test suite on the real stack"
	@echo "make test-loaded [RUNS=2] [LOAD=cpu]   the browser and Docker tests beside a shared CI runner's load (busy cores, a build, disk writes, memory); LOAD=cpu: busy loops only"
	@echo "make lint     ruff (lint + format check) and mypy only (seconds); ruff format fixes the format"
	@echo "make up       start the stack and print its endpoints; make down stops it"
	@echo "make status   what runs where"
	@echo "make window PROFILE=ttl_set_once VARY=age_ttl_pct   when a defect loses: the curve, its window"
	@echo "make soak     the correct profile under every fault and refresh point: 0/N with 95% bounds"
	@echo "make storm N=50   interrupt lab chaos N times (SIGINT/TERM/HUP/KILL): nothing may be left"
	@echo "make bench    the lab's runner against a plain Playwright loop (seconds per trial, ratios)"
	@echo "make lesson   list the lessons; make lesson N=1 [CHECK=1 | RESET=1] runs, checks, resets one"
	@echo "make investigate TARGET=examples/chat-service.toml TRIALS=20   diagnose a black-box backend"
	@echo "make suspects SRC=path/   the lines of a Python backend that may lose the conversation"
	@echo "make k8s SHARDS=3   deploy/k8s's shards and merge on a single-node Kubernetes built here (root; opt-in, minutes)"
	@echo "make k8s-check      deploy/k8s applied to a real API server (no kubelet): the Job's pods inspected"
	@echo "make setup    install everything (venv, redis-server, chromium, toxiproxy 2.12.0, the Node and Go examples)"

setup: venv system toxiproxy node go docker

system:
	@bash scripts/setup.sh system

toxiproxy:
	@bash scripts/setup.sh toxiproxy

venv:
	@bash scripts/setup.sh venv

docker:
	@bash scripts/setup.sh docker

node:
	@bash scripts/setup.sh node

go:
	@bash scripts/setup.sh go

# Lint and types first: seconds, and a failure names file:line before any stack starts.
lint: venv
	$(PY) -m ruff check --quiet lab services tests examples lessons
	$(PY) -m ruff format --check --quiet lab services tests examples lessons
	$(PY) -m mypy

test: setup lint
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# The browser and Docker tests on a loaded machine, the one a CI run may meet (scripts/under_load.sh):
# LOAD=ci (default) keeps every core busy and adds what a shared runner's neighbours do -- a
# parallel build, disk writes with fsync, memory held (MEM_MB, DISK_MB); LOAD=cpu only the busy
# loops (HOG_CPUS=N). RUNS=2 runs them twice.
test-loaded: setup
	@for i in $$(seq $(if $(RUNS),$(RUNS),1)); do \
		LOAD=$(if $(LOAD),$(LOAD),ci) bash scripts/under_load.sh $(PY) -m pytest $(XDIST) tests/e2e tests/compose $(PYTEST_ARGS) || exit $$?; done

test-unit: venv
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

test-integration: setup
	$(PY) -m pytest tests/integration $(PYTEST_ARGS)

up: setup
	@$(LAB) up --mode $(MODE)

down: venv
	@$(LAB) down --mode $(MODE)

status: venv
	@$(LAB) status --mode $(MODE)

# TRIALS=N (per cell), SEED=S, ONLY='profile=incident;refresh=after_ack;turns=5|15', MAX_TRIALS=M,
# SHARD=K/N (shard K of N: whole columns, own ports and run folder; then make merge)
chaos: setup
	@$(LAB) chaos --mode $(MODE) --trials "$(TRIALS)" --seed "$(SEED)" --only "$(ONLY)" \
		--max-trials "$(MAX_TRIALS)" --shard "$(SHARD)" $(if $(MODEL),--model)

# PROFILE=ttl_set_once VARY=age_ttl_pct [VALUES=25,85,115,200]: the window of one defect.
window: setup
	@$(LAB) window --mode $(MODE) --profile "$(if $(PROFILE),$(PROFILE),fire_and_forget)" \
		--vary "$(if $(VARY),$(VARY),refresh_delay_ms)" $(if $(VALUES),--values "$(VALUES)") --seed "$(SEED)"

# DIRS='reports/*-shard*of3' OUT=reports/merged: the shards of one run, one verdict
merge: venv
	@$(LAB) merge $(DIRS) --out "$(OUT)"

# TRIALS=N per cell (default 15: ~9 minutes on 2 cores; 50 = 300 per fault), SEED=S
soak: setup
	@$(LAB) soak --mode $(MODE) --trials "$(TRIALS)" --seed "$(SEED)"

# N interruptions of `lab chaos` (default 10, ~2 minutes), STORM_SEED=S to replay one storm
N_STORM = $(if $(N),$(N),10)
storm: setup
	STORM_N=$(N_STORM) $(PY) -m pytest tests/e2e/test_interrupt_storm.py -s -q $(PYTEST_ARGS)

# TARGET=spec.toml, TRIALS=N (per experiment), SET='start.env.CHAT_DEFECTS=ttl_set_once'
TARGET ?= examples/chat-service.toml
investigate: setup
	@$(LAB) investigate --target "$(TARGET)" --trials "$(TRIALS)" $(if $(SET),--set "$(SET)")

# SRC=files or folders of a Python backend (default: the built-in service)
suspects: venv
	@$(LAB) suspects $(if $(SRC),$(SRC),services/chat)

# PLAIN_RUNS=N (plain loop repetitions per profile), TRIALS=N (lab trials of the correct cell),
# FAIL_BELOW=1 (exit 1 when a target is missed; by default the figures are printed, exit 0)
bench: setup
	@$(LAB) bench --plain-runs "$(PLAIN_RUNS)" --trials "$(TRIALS)" $(if $(FAIL_BELOW),--fail-below)

# Lessons on async pitfalls: `make lesson` lists them; N=3 runs lesson 3 (story, experiment,
# mechanism); CHECK=1 checks your lessons/NN_*/exercise.py under the fault; RESET=1 restores it.
lesson: $(if $(and $(N),$(if $(RESET),,run)),setup,venv)
	@$(LAB) lesson $(N) $(if $(CHECK),--check) $(if $(RESET),--reset) $(if $(MODEL),--model) --trials "$(TRIALS)" --seed "$(SEED)"

# Opt-in, not part of make test: a real single-node cluster (lab k8s --help). The Kubernetes
# programs are built once from the Go module proxy (about 6 min on 2 cores) and cached; root.
k8s: setup docker
	@$(LAB) setup k8s
	@$(LAB) k8s run --shards "$(if $(SHARDS),$(SHARDS),3)" --seed "$(SEED)" --trials "$(TRIALS)"

k8s-check: venv
	@$(LAB) setup k8s
	@$(LAB) k8s check --shards "$(if $(SHARDS),$(SHARDS),3)"

clean: down
	rm -rf .lab/run reports test-results
