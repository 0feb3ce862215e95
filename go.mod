module github.com/bloomd/bloom

go 1.26

require (
	github.com/minio/highwayhash v1.0.4 // indirect
	github.com/twmb/murmur3 v1.2.2 // indirect
	golang.org/x/sys v0.21.0 // indirect
)
