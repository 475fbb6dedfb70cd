#!/usr/bin/env bash
# Compare benchmarks between two commits with benchstat.
#
#   bash benchmarks/compare.sh OLD NEW [BENCH_REGEXP] [PACKAGE]
#   bash benchmarks/compare.sh HEAD~1 HEAD BenchmarkSchedule ./benchmarks
#
# Each commit is checked out in a temporary git worktree and its test
# binary built once; the binaries then run interleaved, one -count 1 round
# each, six rounds (COUNT), so that drift on a shared machine hits both
# alike. benchstat (pinned, through go run) prints the comparison; the raw
# results stay in $OUT (default /tmp/phalanx-bench). BENCHTIME (default
# 1s) is passed as -test.benchtime: give a count (20x) for benchmarks whose
# state drifts with the cycles run (BenchmarkSchedule's churn states), so
# that both sides time the same cycles.
set -euo pipefail
old=${1:?usage: compare.sh OLD NEW [BENCH_REGEXP] [PACKAGE]}
new=${2:?usage: compare.sh OLD NEW [BENCH_REGEXP] [PACKAGE]}
bench=${3:-.}
pkg=${4:-./benchmarks}
count=${COUNT:-6}
benchtime=${BENCHTIME:-1s}
out=${OUT:-/tmp/phalanx-bench}
benchstat="golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da"
cd "$(dirname "$0")/.."
mkdir -p "$out"
work=$(mktemp -d)
trap 'for w in "$work"/old "$work"/new; do git worktree remove --force "$w" >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
for side in old new; do
  rev=${!side}
  git worktree add --quiet --detach "$work/$side" "$rev"
  (cd "$work/$side" && go test -c -o "$work/$side.test" "$pkg")
  : > "$out/$side.txt"
done
dir=${pkg#./}
for round in $(seq "$count"); do
  for side in old new; do
    (cd "$work/$side/$dir" && "$work/$side.test" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" -test.benchmem -test.count 1) \
      | grep -E '^(Benchmark|goos|goarch|pkg|cpu)' >> "$out/$side.txt" || true
    if ! grep -q '^Benchmark' "$out/$side.txt"; then
      echo "compare.sh: no benchmark of $pkg at $side (${!side}) matches $bench" >&2
      exit 1
    fi
  done
  echo "round $round of $count done" >&2
done
go run "$benchstat" "old=$out/old.txt" "new=$out/new.txt"
