#!/usr/bin/env bash
# `make mutation`: mutmut over the pure numeric cores (results are kept in mutants/, so a
# module can be run again alone), then the kill rate per module and the surviving mutants
# (scripts/mutation_report.py). Config: [tool.mutmut] in
# pyproject.toml. Not part of `make test`: it runs the cores' fast tests once per mutant.
# MODULES="judging.ratings agreement.cider" scripts/mutation.sh runs only those modules.
set -euo pipefail
cd "$(dirname "$0")/.."
export NLTK_DATA="${NLTK_DATA:-$PWD/var/nltk_data}"
mkdir -p mutants
JOBS=${MUTATION_JOBS:-$(nproc)}
# One `mutmut run` for every module: each run first generates every mutant and re-runs the
# tests once to map tests to functions (~35 s), so one run per module paid that eleven times.
# Mutants named on the command line are run again even where mutants/ holds a result (a new
# test may catch them now); mutmut would keep an unnamed mutant's old result.
MODULES=${MODULES:-"judging.scores judging.parsers judging.ratings agreement.cider
agreement.statistics.*"}
set -f  # the names are mutmut patterns, not file globs
read -r -a globs <<< "$(printf '%s.* ' $MODULES)"
start=$(date +%s)
.venv/bin/mutmut run --max-children "$JOBS" "${globs[@]}" > mutants/run.log 2>&1 || {
    tail -c 4000 mutants/run.log; echo; echo "mutmut failed"; exit 1; }
echo "mutmut: $(( $(date +%s) - start )) s"
.venv/bin/python scripts/mutation_report.py
