package redisbloom_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/bloomd/bloom/redisbloom"
)

// TestCapacityWithin grows chains under a Reserve hook that refuses past a limit, as bloomd's
// bf-max-filter-bytes does, and checks that CapacityWithin predicted where the growth stopped.
func TestCapacityWithin(t *testing.T) {
	errLimit := errors.New("over the limit")
	for _, tc := range []struct {
		capacity  uint64
		rate      float64
		expansion uint32
		limit     uint64
	}{
		{100, 0.01, 2, 4096},
		{100, 0.01, 1, 4096},
		{50, 0.001, 4, 20000},
		{1000, 0.1, 2, 1 << 14},
		{10, 0.01, 2, 100}, // smaller than the chain itself: no growth
	} {
		var used uint64
		hook := func(n uint64) error {
			if used+n > tc.limit && used > 0 {
				return errLimit
			}
			used += n
			return nil
		}
		ch, err := redisbloom.NewChain(tc.capacity, tc.rate, tc.expansion, false, &redisbloom.Options{Reserve: hook})
		if err != nil {
			t.Fatal(err)
		}
		want := ch.CapacityWithin(tc.limit)
		i := 0
		for ; i < 1_000_000; i++ {
			if _, err := ch.Add([]byte(strconv.Itoa(i))); errors.Is(err, errLimit) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
		if got := ch.Capacity(); got != want {
			t.Errorf("%+v: grew to capacity %d (%d links, %d bytes), CapacityWithin said %d", tc, got, ch.NumFilters(), ch.Size(), want)
		}
		t.Logf("%+v: %d links, capacity %d, size %d", tc, ch.NumFilters(), ch.Capacity(), ch.Size())
		if ch.Size() > tc.limit && ch.NumFilters() > 1 {
			t.Errorf("%+v: size %d passed the limit", tc, ch.Size())
		}
		if uint64(ch.Card()) > ch.Capacity() {
			t.Errorf("%+v: %d items in capacity %d", tc, ch.Card(), ch.Capacity())
		}
	}
	nonScaling, _ := redisbloom.NewChain(100, 0.01, 2, true, nil)
	if got := nonScaling.CapacityWithin(1 << 40); got != 100 {
		t.Errorf("non-scaling chain: CapacityWithin = %d, want its capacity 100", got)
	}
}
