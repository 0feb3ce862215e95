module github.com/bloomd/bloom

go 1.26.0

require (
	github.com/minio/highwayhash v1.0.4
	github.com/twmb/murmur3 v1.2.2
)

require golang.org/x/sys v0.48.0 // indirect
