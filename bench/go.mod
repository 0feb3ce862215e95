module github.com/bloomd/bloom/bench

go 1.26.0

require (
	github.com/bits-and-blooms/bloom/v3 v3.7.1
	github.com/bloomd/bloom v0.0.0
	github.com/twmb/murmur3 v1.2.2
	golang.org/x/sys v0.48.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.2 // indirect
	github.com/minio/highwayhash v1.0.4 // indirect
)

replace github.com/bloomd/bloom => ../
