#!/usr/bin/env bash
# Run every benchmark in order; each writes benchmarks/results/NAME.json.
# Extra arguments (e.g. --data DIR) are not forwarded: run a script by hand for other options.
set -euo pipefail
cd "$(dirname "$0")/.."

# (a) tokens: simulated decisions, real tokenizer counts (no model inference; under a minute)
python benchmarks/tokens.py
# (b) concurrency: index wall time against the local mock server (about 2 minutes, mostly waiting on the mock)
python benchmarks/concurrency.py
# (c) first answer with the embedded default model: real inference, takes ~20-40 minutes on 2 cores
python benchmarks/first_answer.py
# (f) start-up of fresh processes (import, --help, methods, cached asks against the mock; about 1 minute)
python benchmarks/startup.py
# (g) replicas: 2 pagemind serve on one pgserver Postgres, one killed half-way; 1 vs 2 replicas; archival search
#     on 100k passages, Postgres vs SQLite (about 2 minutes + ~10 for loading 100k passages into Postgres)
python benchmarks/replicas.py
# (h) bulk loads: 100k archival passages into SQLite and Postgres, then the HNSW index built (about 3-10 minutes)
python benchmarks/bulk_load.py
# (i) the cost of citing: every document method on the long sample, cite off / sentences / quotes, against the
#     mock (about 1.5 minutes)
python benchmarks/citations.py
# (j) evidence recall with a real model: QMSum val (every document method) and LoCoMo (the agent), a few labelled
#     questions at a matched budget (tens of minutes on 2 cores; --queries 0 runs the whole split: hours)
python benchmarks/evidence.py qmsum --queries 3 --budget 1500 --threads 1
python benchmarks/evidence.py locomo --queries 3 --budget 1500 --threads 1
# (l) the shared model process: RSS of three pagemind processes, throughput by slots, a short question's latency
#     during another user's build; shared llama-server vs in-process (about 15-25 minutes on 2 cores)
python benchmarks/shared_model.py
# (m) what auto reads beyond the window with: the long sample's five questions per method with the default model
#     (OP-RAG minutes; ReadAgent-P and MemWalker build their memories first: about an hour on 2 cores)
python benchmarks/auto_choice.py --methods auto,readagent-p,memwalker
# (ae) the FinanceBench scorer against the paper's hand grades (no model; seconds)
python benchmarks/financebench_scorer.py
