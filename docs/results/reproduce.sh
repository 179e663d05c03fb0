#!/usr/bin/env bash
# The real runs behind docs/results/*-qwen2.5-coder-1.5b: the embedded default model on 2 CPU cores.
# Run from the project root. Each command resumes when run again; a larger --limit (or more seeds) extends the
# same seeded sample. The committed runs used the defaults below (about 5 hours in all on 2 cores). The whole
# QuALITY slice and 20 QMSum queries (QUALITY_LIMIT=47 QMSUM_LIMIT=20) would take about 25 more hours here:
# ~28 minutes per QuALITY question through every method, ~20 per QMSum query plus ~18 per new meeting.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
STORE=runs/eval-store.db   # a dedicated store: every memory is built, and costed, inside the run

# MemGPT nested key-value retrieval, levels 1-4 (= nesting 0-3), MemGPT vs the full context
pagemind eval nested-kv -m memgpt -m full -p levels=1,2,3,4 -p seeds="${KV_SEEDS:-4}" \
    --store "$STORE" --run-dir docs/results/nested-kv-qwen2.5-coder-1.5b --no-progress

# QuALITY slice: every method, plus RAG with FragRel as a variant of RAG (same fragments, same question)
pagemind eval quality -m all -m rag@fragrel -O rag@fragrel:fragrel=true --limit "${QUALITY_LIMIT:-6}" \
    --store "$STORE" --run-dir docs/results/quality-qwen2.5-coder-1.5b --no-progress

# QMSum val: ReadAgent-P/S, GistMem and the baselines on queries of whole meetings, with the LLM raters
pagemind eval qmsum -m readagent-p -m readagent-s -m gistmem -m full -m rag -m op-rag --limit "${QMSUM_LIMIT:-4}" \
    --by-document --raters --store "$STORE" --run-dir docs/results/qmsum-qwen2.5-coder-1.5b --no-progress

# MMLongBench-Doc-V2, text-only look-up questions with `auto` (docs/results/README.md says how DATA was cut: V2's
# samples.json kept to the lookup / Pure-text rows of the PageIndex PDFs under 4 MiB). Not run by this script:
#   pagemind eval run mmlongbench-doc -m auto --data DATA --limit 8 --seed 0 \
#       --run-dir docs/results/mmlongbench-doc-text-lookup-qwen2.5-coder-1.5b --no-progress
# With the whole set (`pagemind data get mmlongbench-doc`), the same kind of question:
#   pagemind eval mmlongbench-doc -m auto -p task_type=lookup -p source=Pure-text --limit 8 --store "$STORE"
