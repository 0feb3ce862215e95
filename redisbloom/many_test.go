package redisbloom

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// chainBytes is a chain's whole BF.SCANDUMP: header and every chunk.
func chainBytes(c *Chain) []byte {
	b := c.Header()
	for _, chunk := range c.Chunks() {
		b = append(b, chunk...)
	}
	return b
}

// AddMany and ExistsMany must give exactly the results, counts, links and bits of Add and Exists
// called item by item: across growth, with duplicates, after a non-scaling chain fills (where
// AddMany stops when told to), and when the Reserve hook refuses growth.
func TestManyMatchesOneByOne(t *testing.T) {
	type result struct {
		added bool
		err   error
	}
	for _, nonScaling := range []bool{false, true} {
		for _, budget := range []uint64{1 << 62, 3000} {
			name := fmt.Sprintf("nonScaling=%v budget=%d", nonScaling, budget)
			mk := func() *Chain {
				used := uint64(0)
				c, err := NewChain(100, 0.01, 2, nonScaling, &Options{Reserve: func(n uint64) error {
					if used+n > budget {
						return errors.New("refused")
					}
					used += n
					return nil
				}})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			one, many := mk(), mk()
			keys := append(items("k-", 700), items("k-", 300)...) // duplicates at the end
			for from := 0; from < len(keys); from += 37 {
				batch := keys[from:min(from+37, len(keys))]
				var want, got []result
				for _, k := range batch {
					added, err := one.Add(k)
					want = append(want, result{added, err})
				}
				many.AddMany(batch, func(i int, added bool, err error) bool {
					if i != len(got) {
						t.Fatalf("%s: AddMany reported item %d after %d items", name, i, len(got))
					}
					got = append(got, result{added, err})
					return true
				})
				if len(got) != len(want) {
					t.Fatalf("%s: AddMany reported %d items of %d", name, len(got), len(want))
				}
				for i := range want {
					if got[i].added != want[i].added || (got[i].err == nil) != (want[i].err == nil) ||
						(want[i].err != nil && got[i].err.Error() != want[i].err.Error()) {
						t.Fatalf("%s: item %q: AddMany gave %v, Add %v", name, batch[i], got[i], want[i])
					}
				}
			}
			if !bytes.Equal(chainBytes(one), chainBytes(many)) || one.Card() != many.Card() {
				t.Fatalf("%s: the chains differ after the same adds", name)
			}
			probe := append(items("k-", 200), items("absent-", 200)...)
			n := 0
			many.ExistsMany(probe, func(i int, present bool) {
				if i != n || present != one.Exists(probe[i]) {
					t.Fatalf("%s: ExistsMany item %d (%q) = %v", name, i, probe[i], present)
				}
				n++
			})
			if n != len(probe) {
				t.Fatalf("%s: ExistsMany reported %d items of %d", name, n, len(probe))
			}
		}
	}
	// Stopping: fn returning false ends the batch.
	c := mustChain(t, 100, 0.01, 2, false)
	calls := 0
	c.AddMany(items("s-", 10), func(i int, _ bool, _ error) bool { calls++; return i < 2 })
	if calls != 3 || c.Card() != 3 {
		t.Fatalf("AddMany told to stop after item 2 made %d calls and added %d items", calls, c.Card())
	}
}
