module github.com/bloomd/bloom

go 1.26.0

require (
	github.com/minio/highwayhash v1.0.4
	github.com/twmb/murmur3 v1.2.2
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
