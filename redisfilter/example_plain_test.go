package redisfilter_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"

	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
)

// A Go service joins Java services that keep a Bloom filter with the Spring BloomFilterHelper
// (new BloomFilterHelper<>(funnel, 1000000, 0.01) and RedisTemplate.setBit on "bloom:users"):
// the same parameters, the same key, and each key's bytes as the Java funnel feeds them.
func ExampleNewPlain() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()

	params, err := redisfilter.SpringHelper(1_000_000, 0.01) // the Java constructor's arguments
	if err != nil {
		log.Fatal(err)
	}
	users, err := redisfilter.NewPlain(ctx, rdb, "bloom:users", params, nil)
	if err != nil {
		log.Fatal(err) // ErrConfigMismatch if the string is longer than params.M allows
	}
	// Funnel (from, into) -> into.putString(from, Charsets.UTF_8): the string's UTF-8 bytes.
	if _, err := users.AddString(ctx, "alice@example.com"); err != nil {
		log.Fatal(err)
	}
	maybe, err := users.TestString(ctx, "bob@example.com")
	fmt.Println(maybe, err)
}

// The funnel (from, into) -> into.putString(from, Charsets.UTF_8) feeds the string's UTF-8 bytes,
// which AddString and TestString send. The example prints the SETBIT offsets the Java helper
// computes for one key: the bits Add sets and Test reads.
func ExampleSpringHelper() {
	params, err := redisfilter.SpringHelper(1_000_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(params)
	key := []byte("héllo") // f.AddString(ctx, "héllo") sends these bytes
	fmt.Println(params.Scheme.Locations(nil, key, params.K, params.M))
	// Output:
	// m=9585058 k=7 scheme=guava32 bit-order=setbit
	// [7402696 895032 9192761 2540937 3828266 4469462 7264236]
}

// A frequently copied funnel puts the string twice:
// (from, into) -> into.putString(from, Charsets.UTF_8).putString(from, Charsets.UTF_8).
// Guava's hasher streams, so that is the hash of the UTF-8 bytes written twice in a row: add
// s+s (f.AddString(ctx, s+s)).
func ExampleSpringHelper_stringTwice() {
	params, err := redisfilter.SpringHelper(1_000_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	s := "héllo"
	key := []byte(s + s) // f.AddString(ctx, s+s)
	fmt.Println(params.Scheme.Locations(nil, key, params.K, params.M))
	// Output:
	// [9152043 5349300 8899812 3117497 2664817 8447132 5801980]
}

// Funnels.longFunnel() (or (from, into) -> into.putLong(from)) feeds the long as 8
// little-endian bytes.
func ExampleSpringHelper_putLong() {
	params, err := redisfilter.SpringHelper(1_000_000, 0.01)
	if err != nil {
		log.Fatal(err)
	}
	var id int64 = -42
	key := binary.LittleEndian.AppendUint64(nil, uint64(id)) // f.Add(ctx, key)
	fmt.Println(params.Scheme.Locations(nil, key, params.K, params.M))
	// Output:
	// [5074746 3391513 1411403 568706 2548816 5917443 3937333]
}
