package cli

import (
	"os"
	"strings"
	"testing"
)

// TestPullRefusals: pull from a real bloomd refuses a missing key, a key of another type, and
// formats that cannot hold what the server has, and writes no file. The round trip, with
// --progress, is TestPushPullRoundTrip in push_test.go.
func TestPullRefusals(t *testing.T) {
	addr, s := startBloomd(t, "", nil)
	url := "redis://" + addr
	out := tempPath(t, "out")
	run(t, "", "pull", url+"/missing", out).fails(t, "holds no filter")
	exec(s, "SET", "str", "v")
	run(t, "", "pull", url+"/str", out).fails(t, "not a Bloom filter")
	exec(s, "BF.RESERVE", "grown", "0.01", "10")
	for i := range 100 {
		exec(s, "BF.ADD", "grown", "item"+strings.Repeat("x", i))
	}
	run(t, "", "pull", url+"/grown", out, "--to", "native").fails(t, "chain of", "--to redisbloom")
	run(t, "", "pull", url+"/grown", out, "--to", "guava").fails(t, "cannot be written as a Guava stream")
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed pull wrote its file")
	}
}
