module github.com/phalanx-sched/phalanx

go 1.26

require (
	github.com/bits-and-blooms/bitset v1.29.0
	github.com/google/btree v1.1.3
)

require github.com/google/go-cmp v0.7.0
