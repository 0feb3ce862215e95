package bloom_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/internal/conformance"
)

// Decode reads records of every kind, one after another from one stream, and each comes back as
// its own type answering as the original.
func TestDecodeAnyKind(t *testing.T) {
	filters := batchKinds(t, 2000)
	names := []string{"classic", "classic-redisbloom", "blocked", "blocked-4", "scalable", "scalable-blocked", "counting"}
	keys := conformance.Keys(70, 2000)
	var stream bytes.Buffer
	for _, name := range names {
		filters[name].AddMany(nil, keys)
		if _, err := filters[name].WriteTo(&stream); err != nil {
			t.Fatal(err)
		}
	}
	probe := conformance.Keys(71, 5000)
	for _, name := range names {
		f := filters[name]
		g, err := bloom.Decode(&stream)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprintf("%T", g) != fmt.Sprintf("%T", f) {
			t.Fatalf("%s decoded as %T", name, g)
		}
		if g.Info() != f.Info() {
			t.Errorf("%s: Info %+v, want %+v", name, g.Info(), f.Info())
		}
		for _, k := range append(probe, keys...) {
			if g.Test(k) != f.Test(k) {
				t.Fatalf("%s: decoded filter answers differently", name)
			}
		}
	}
	if _, err := bloom.Decode(&stream); !errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), "empty input") {
		t.Errorf("Decode at the end of the stream: %v", err)
	}
}

func TestInfo(t *testing.T) {
	f := batchKinds(t, 1000)
	for name, want := range map[string]string{
		"classic": "classic", "blocked": "blocked", "scalable": "scalable", "counting": "counting",
	} {
		info := f[name].Info()
		if info.Kind != want || info.K == 0 || info.M == 0 || info.Bytes == 0 || info.FPP != 0 || info.Count != 0 {
			t.Errorf("%s: Info of an empty filter = %+v", name, info)
		}
	}
	if i := f["scalable"].Info(); i.Links != 1 || i.Scheme != bloom.Guava64 {
		t.Errorf("scalable Info = %+v", i)
	}
	if i := f["classic-redisbloom"].Info(); i.Scheme != bloom.RedisBloom64 {
		t.Errorf("classic Info = %+v", i)
	}
}

func TestDecodeBytesRefuses(t *testing.T) {
	b, _ := bloom.NewBlocked(100, 0.01)
	good := mustMarshal(t, b)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty input"},
		{"trailing", append(bytes.Clone(good), 1, 2), "2 unexpected bytes"},
		{"kind 0", nativeHeader(0, 1, 7, 64, 0, 8, nil), "unknown filter kind 0"},
		{"kind 9", nativeHeader(9, 1, 7, 64, 0, 8, nil), "unknown filter kind 9"},
		{"truncated", good[:70], "truncated payload"},
	} {
		f, err := bloom.DecodeBytes(c.data)
		if f != nil || !errors.Is(err, bloom.ErrCorrupt) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, %v; want nil and ErrCorrupt mentioning %q", c.name, f, err, c.want)
		}
	}
}

// The fuzz seed corpus holds one small record of each kind (testdata/kinds, written by
// TestWriteKindSeeds when BLOOM_WRITE_SEEDS=1); they must stay decodable.
func TestKindSeedsDecode(t *testing.T) {
	if os.Getenv("BLOOM_WRITE_SEEDS") == "1" {
		writeKindSeeds(t)
	}
	seeds, _ := filepath.Glob("testdata/kinds/*.bloom")
	if len(seeds) < 5 {
		t.Fatalf("%d seed files in testdata/kinds", len(seeds))
	}
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		f, err := bloom.DecodeBytes(data)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if again := mustMarshal(t, f); !bytes.Equal(again, data) {
			t.Errorf("%s: does not re-encode to itself", s)
		}
	}
}

func writeKindSeeds(t *testing.T) {
	blocked, _ := bloom.NewBlockedWithParams(512*3, 6, 2)
	blocked8, _ := bloom.NewBlockedWithParams(512*2, 8, 8)
	scalable, _ := bloom.NewScalable(4, 0.1, &bloom.ScalableOptions{Growth: 2})
	scalableB, _ := bloom.NewScalable(4, 0.1, &bloom.ScalableOptions{Blocked: true, Tightening: 0.7})
	counting, _ := bloom.NewCountingWithParams(128, 3, bloom.Guava64)
	countingR, _ := bloom.NewCountingWithParams(70, 2, bloom.Redisson)
	for name, f := range map[string]bloom.AnyFilter{"blocked-2": blocked, "blocked-8": blocked8,
		"scalable-classic": scalable, "scalable-blocked": scalableB, "counting": counting, "counting-redisson": countingR} {
		for i := range 20 {
			f.AddString(fmt.Sprint("k", i))
		}
		if err := os.WriteFile(filepath.Join("testdata/kinds", name+".bloom"), mustMarshal(t, f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
