module github.com/phalanx-sched/phalanx

go 1.26

require github.com/bits-and-blooms/bitset v1.29.0

require github.com/google/go-cmp v0.7.0

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
