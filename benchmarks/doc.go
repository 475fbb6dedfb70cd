// Package benchmarks holds the go test -bench suite of Phalanx: placement,
// gang admission, state copies, fair-share recompute and full scheduling
// cycles over several inventories (the default 2,000-GPU cluster, a
// 2,016-GPU NVL72 layout, a 16,384-GPU SuperPOD-like tree, a 100,000-GPU
// fat tree and the real 847-host Alibaba topology) and states (empty, 50%
// and 90% busy, fragmented by a seeded workload), plus a scaling sweep from
// 250 to 12,500 nodes, and building and loading clusters of 2,048 GPUs,
// 100,000 GPUs and (with PHALANX_BENCH_LARGE=1) a million nodes;
// cmd/topoload measures the million-node cases' peak memory in a fresh
// process.
//
//	go test -run '^$' -bench . ./benchmarks/...
//
// Sub-benchmark names group for benchstat (inv=2k/state=90/gpus=512). The
// trace simulator is in benchmarks/sim; comparisons with Kueue and Slurm
// are in benchmarks/peers, a separate module. README.md in this folder has
// the tables and the commands that produced them.
package benchmarks
