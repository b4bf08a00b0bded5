#!/usr/bin/env bash
# Benchmark: the O(n²) note of `isotropy measure DIR --scheduler ADDRESS` (an existing cluster: a scheduler and 2
# one-thread workers started as their own processes by dask's command line) against the time the metric then takes,
# beside the same command with `--workers 2` (a LocalCluster the command starts). N rows (default 80,000) of 384
# float32 features of rank about 12 in .npy shards of 10,000 rows; TwoNN alone, then TwoNN and MLE from one search.
# Read each note's "about ... s" against the metric's seconds in the table below it (goal: within 1.5 times).
#
# Usage: [N=80000] [V=.venv/bin] [METRICS="twonn_dimension twonn_dimension,mle_dimension"] bash benchmarks/cost_note_scheduler.sh
set -euo pipefail
cd "$(dirname "$0")/.."
V=${V:-.venv/bin}
D=$(mktemp -d)/shards; N=${N:-80000}
mkdir -p $D
$V/python - <<PY
import numpy as np
rng = np.random.default_rng(0)
n, d = $N, 384
Z = rng.normal(size=(n, 12)).astype(np.float32) @ rng.normal(size=(12, d)).astype(np.float32)
Z += 0.1 * rng.normal(size=(n, d)).astype(np.float32)
for i, s in enumerate(range(0, n, 10000)):
    np.save(f"$D/part-{i:03d}.npy", Z[s:s + 10000])
PY
S=$(dirname $D)/scheduler.json
$V/dask scheduler --scheduler-file $S --no-dashboard --port 0 > $(dirname $D)/scheduler.log 2>&1 &
SPID=$!
for _ in $(seq 60); do [ -s $S ] && break; sleep 1; done
ADDR=$($V/python -c "import json;print(json.load(open('$S'))['address'])")
$V/dask worker --scheduler-file $S --nthreads 1 --nworkers 2 --no-dashboard --memory-limit 4GiB > $(dirname $D)/workers.log 2>&1 &
WPID=$!
sleep 8
for metric in ${METRICS:-twonn_dimension twonn_dimension,mle_dimension}; do
  for how in "--scheduler $ADDR" "--workers 2"; do
    echo "### $metric $how"
    /usr/bin/time -f "wall %e s" $V/isotropy measure $D --metrics $metric $how 2>&1 | grep -v "^Warning" | cut -c1-400
  done
done
kill $WPID $SPID 2>/dev/null || true
rm -rf "$(dirname $D)"
