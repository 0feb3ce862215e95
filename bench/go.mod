module github.com/bloomd/bloom/bench

go 1.26.0

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/bloomd/bloom v0.0.0
	github.com/twmb/murmur3 v1.2.2
	golang.org/x/sys v0.49.0
)

require (
	github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da // indirect
)

replace github.com/bloomd/bloom => ../

tool golang.org/x/perf/cmd/benchstat
