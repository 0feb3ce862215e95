package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bloomd/bloom/redisbloom"
)

// The RDB file written by Redis 7.0 with RedisBloom 2.6.28 that internal/rdb's tests record.
const recordedRDB = "../rdb/testdata/bloom-compressed.rdb"

func TestRDBList(t *testing.T) {
	out := run(t, "", "rdb", "list", recordedRDB).ok(t)
	for _, want := range []string{
		`0   "bf-scaled"      bloom   300             148    4        552`,
		`0   "cf-opts"        cuckoo  32 buckets × 4  480    3        896`,
		"14 other keys",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bloom rdb list: no line %q in\n%s", want, out)
		}
	}
	run(t, "", "rdb", "list", "../rdb/testdata/README.md").fails(t, "is not a Redis RDB file")
}

// TestRDBPull pulls a 4-link scalable filter out of the RDB file and requires the RedisBloom
// dump file to hold the chain Redis recorded (BF.INFO's numbers, every item present).
func TestRDBPull(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "scaled.bfdump")
	run(t, "", "rdb", "pull", recordedRDB, "bf-scaled", out).ok(t)
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ch, err := redisbloom.ReadDump(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ch.Capacity() != 300 || ch.Card() != 148 || ch.NumFilters() != 4 || ch.Size() != 840 {
		t.Errorf("pulled chain: capacity %d, items %d, filters %d, size %d", ch.Capacity(), ch.Card(), ch.NumFilters(), ch.Size())
	}
	for i := range 150 {
		if !ch.Exists([]byte("item-" + strconv.Itoa(i))) {
			t.Fatalf("item-%d missing", i)
		}
	}
	run(t, "", "rdb", "pull", recordedRDB, "bf-default", filepath.Join(dir, "d.bloom"), "--to", "native").ok(t)
	run(t, "", "rdb", "pull", recordedRDB, "bf-scaled", filepath.Join(dir, "s.bloom"), "--to", "native").fails(t, "4 sub-filters")
	run(t, "", "rdb", "pull", recordedRDB, "cf", filepath.Join(dir, "c")).fails(t, "cuckoo filter")
	run(t, "", "rdb", "pull", recordedRDB, "str", filepath.Join(dir, "c")).fails(t, "is a string")
	run(t, "", "rdb", "pull", recordedRDB, "missing", filepath.Join(dir, "c")).fails(t, "no key")
	run(t, "", "rdb", "pull", recordedRDB, "bf-scaled", out).fails(t, "already exists")
}
