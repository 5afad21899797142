#!/usr/bin/env bash
# `make mutation`: mutmut over the pure numeric cores, one module at a time (each `mutmut run`
# keeps its results in mutants/, so a module can be run again alone), then the kill rate per
# module and the surviving mutants (scripts/mutation_report.py). Config: [tool.mutmut] in
# pyproject.toml. Not part of `make test`: it runs the cores' fast tests once per mutant.
# MODULES="judging.ratings agreement.cider" scripts/mutation.sh runs only those modules.
set -euo pipefail
cd "$(dirname "$0")/.."
export NLTK_DATA="${NLTK_DATA:-$PWD/var/nltk_data}"
MODULES=${MODULES:-"judging.scores judging.parsers agreement.statistics._common
agreement.statistics.matrices agreement.statistics.proportions agreement.statistics.correlation
agreement.statistics.majority agreement.statistics.bias agreement.cider judging.ratings
agreement.statistics.reliability"}
mkdir -p mutants
JOBS=${MUTATION_JOBS:-$(nproc)}
for module in $MODULES; do
    start=$(date +%s)
    # mutmut prints one line per mutant it tried; the report below summarises them.
    .venv/bin/mutmut run --max-children "$JOBS" "$module.*" > "mutants/$module.log" 2>&1 || {
        tail -n 40 "mutants/$module.log"; echo "mutmut failed on $module"; exit 1; }
    echo "$module: $(( $(date +%s) - start )) s"
done
.venv/bin/python scripts/mutation_report.py
