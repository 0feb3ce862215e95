package redisbloom_test

import (
	"fmt"

	"github.com/bloomd/bloom/redisbloom"
)

func Example() {
	// BF.RESERVE users 0.01 100: capacity 100 at 1%, growing by 2 when full.
	c, err := redisbloom.NewChain(100, 0.01, 2, false, nil)
	if err != nil {
		panic(err)
	}
	added, err := c.Add([]byte("alice")) // BF.ADD users alice
	fmt.Println(added, err)
	added, err = c.Add([]byte("alice"))
	fmt.Println(added, err)
	fmt.Println(c.Exists([]byte("alice")), c.Exists([]byte("bob")))
	// BF.INFO users
	fmt.Println(c.Capacity(), c.Size(), c.NumFilters(), c.Card(), c.Expansion())
	fmt.Println(c.Debug())
	// Output:
	// true <nil>
	// false <nil>
	// true false
	// 100 240 1 1 2
	// [size:1 bytes:144 bits:1152 hashes:8 hashwidth:64 capacity:100 size:1 ratio:0.005]
}

// A chain is copied the way BF.SCANDUMP and BF.LOADCHUNK copy a RedisBloom key.
func ExampleChain_ScanDump() {
	src, _ := redisbloom.NewChain(10, 0.1, 2, false, nil)
	src.Add([]byte("item1"))

	var dst *redisbloom.Chain
	for it := int64(0); ; {
		next, data := src.ScanDump(it) // BF.SCANDUMP src it
		if next == 0 {
			break
		}
		if next == 1 {
			dst, _ = redisbloom.LoadHeader(data, nil) // BF.LOADCHUNK dst 1 header
		} else if err := dst.LoadChunk(next, data); err != nil { // BF.LOADCHUNK dst next data
			panic(err)
		}
		fmt.Printf("%d %x\n", next, data)
		it = next
	}
	fmt.Println(dst.Exists([]byte("item1")), dst.Card())
	// Output:
	// 1 01000000000000000100000005000000020000000800000000000000400000000000000001000000000000009a9999999999a93f4af7d49edef01840050000000a0000000000000000
	// 9 0108008000042000
	// true 1
}
