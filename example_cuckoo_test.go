package bloom_test

import (
	"fmt"

	"github.com/bloomd/bloom"
)

// A cuckoo filter holds one fingerprint per key, so keys can be removed and counted; it is laid
// out as RedisBloom's CF.* filters are (CF.RESERVE sessions 1000).
func ExampleCuckoo() {
	c, err := bloom.NewCuckoo(1000, nil)
	if err != nil {
		panic(err)
	}
	c.AddString("session-1")
	c.AddString("session-2")
	c.AddString("session-2") // a second copy: Count says 2
	fmt.Println(c.TestString("session-1"), c.Count([]byte("session-2")))
	fmt.Println(c.RemoveString("session-1"), c.TestString("session-1"))
	fmt.Println(c.RemoveString("never-added"))
	info := c.Info()
	fmt.Println(info.Filters, info.Bytes)
	// Output:
	// true 2
	// true false
	// false
	// 1 1024
}
