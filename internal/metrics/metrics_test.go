package metrics

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

func TestHistogramBuckets(t *testing.T) {
	// Every value lands in a bucket whose bounds hold it, and bounds grow without gaps.
	for i := 1; i < numBuckets; i++ {
		if upper(i) <= upper(i-1) {
			t.Fatalf("upper(%d)=%d <= upper(%d)=%d", i, upper(i), i-1, upper(i-1))
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		ns := int64(r.Uint64() >> (r.IntN(64) + 1))
		b := bucket(ns)
		lo := int64(0)
		if b > 0 {
			lo = upper(b - 1)
		}
		if b < numBuckets-1 && (ns < lo || ns >= upper(b)) {
			t.Fatalf("%d in bucket %d = [%d, %d)", ns, b, lo, upper(b))
		}
		if b < numBuckets-1 && b >= 1<<subBits && float64(upper(b)-lo) > 0.25*float64(lo)+1 {
			t.Fatalf("bucket %d = [%d, %d) wider than a quarter", b, lo, upper(b))
		}
	}
}

func TestHistogramPercentiles(t *testing.T) {
	var h Histogram
	s := h.Snapshot()
	if s.Percentile(50) != 0 {
		t.Error("empty histogram has a median")
	}
	// 1..1000 µs: the true p50 is 500 µs, p99 990 µs; a bucket bound is at most 25% above.
	for i := int64(1); i <= 1000; i++ {
		h.Observe(i * 1000)
	}
	s = h.Snapshot()
	for _, c := range []struct {
		p    float64
		want int64
	}{{50, 500e3}, {99, 990e3}, {99.9, 999e3}, {100, 1000e3}} {
		got := s.Percentile(c.p)
		if got < c.want || float64(got) > 1.25*float64(c.want) {
			t.Errorf("p%v = %d ns, want within [%d, %d]", c.p, got, c.want, int64(1.25*float64(c.want)))
		}
	}
	var last uint64
	var bounds []float64
	s.Buckets(func(le float64, cum uint64) {
		if cum < last {
			t.Errorf("bucket le=%v: cumulative count fell from %d to %d", le, last, cum)
		}
		last = cum
		bounds = append(bounds, le)
	})
	if last != 1000 || !slices.IsSorted(bounds) {
		t.Errorf("buckets end at %d of 1000; bounds %v", last, bounds)
	}
	if sum := s.Sum(); sum < 0.45 || sum > 0.56 { // true sum: 0.5005 s
		t.Errorf("Sum = %v s, want about 0.5005", sum)
	}
}

func TestErrorCode(t *testing.T) {
	for msg, want := range map[string]string{
		"ERR wrong number of arguments": "ERR", "WRONGTYPE Operation": "WRONGTYPE", "OOM command not allowed": "OOM",
		"NOAUTH Authentication required.": "NOAUTH", "item exists": "ERR", "": "ERR", "LOADING": "LOADING",
	} {
		if got := ErrorCode(msg); got != want {
			t.Errorf("ErrorCode(%q) = %q, want %q", msg, got, want)
		}
	}
}

func TestStatsErrorsCapped(t *testing.T) {
	s := NewStats()
	for i := range 1000 {
		s.Error("E" + strconv.Itoa(i) + " made up")
	}
	if n := len(s.Errors()); n != maxErrorCodes {
		t.Errorf("%d error codes kept, want the cap %d", n, maxErrorCodes)
	}
	if s.ErrorReplies() != 1000 {
		t.Errorf("ErrorReplies = %d", s.ErrorReplies())
	}
	s.Reset()
	if len(s.Errors()) != 0 || s.ErrorReplies() != 0 {
		t.Error("Reset left errors")
	}
}

func TestCommandsSnapshot(t *testing.T) {
	s := NewStats()
	a, b := s.Command("bf.add"), s.Command("bf.exists")
	if s.Command("bf.add") != a {
		t.Fatal("Command made a second record for one name")
	}
	a.Add(3, 3000)
	a.Observe(1000)
	b.Reject()
	s.Command("idle")
	got := s.Commands()
	if len(got) != 2 || got[0].Name != "bf.add" || got[0].Calls != 3 || got[0].Ns != 3000 || got[1].Rejected != 1 {
		t.Errorf("Commands = %+v", got)
	}
}

func TestLatencyMonitor(t *testing.T) {
	m := NewLatencyMonitor()
	if m.Spike(1e9) {
		t.Error("a monitor that is off reports a spike")
	}
	m.SetThreshold(10)
	if m.Spike(9e6) || !m.Spike(10e6) {
		t.Error("threshold 10 ms misjudged")
	}
	m.Add("command", 12e6)
	m.Add("command", 30e6) // same second: the larger is kept
	m.Add("fast-command", 11e6)
	l := m.Latest()
	if len(l) != 2 || l[0].Name != "command" || l[0].Latest.Millis != 30 || l[0].Max != 30 {
		t.Errorf("Latest = %+v", l)
	}
	if h := m.History("command"); len(h) != 1 || h[0].Millis != 30 {
		t.Errorf("History = %+v", h)
	}
	if n := m.Reset("command", "nosuch"); n != 1 || len(m.Latest()) != 1 {
		t.Errorf("Reset(command) = %d", n)
	}
}

func TestSlowLogRing(t *testing.T) {
	l := NewSlowLog()
	l.SetThreshold(0)
	l.SetMaxLen(2)
	for i := range 5 {
		l.Add(int64(i)*1000, [][]byte{[]byte("cmd")}, "a", "n")
	}
	got := l.Get(-1)
	if len(got) != 2 || got[0].ID != 4 || got[1].ID != 3 || got[0].Micros != 4 {
		t.Errorf("Get = %+v", got)
	}
	l.SetThreshold(-1)
	if l.Slow(1e12) {
		t.Error("slow log off, yet Slow")
	}
	l.Reset()
	l.SetThreshold(0)
	l.Add(0, nil, "", "")
	if got := l.Get(1); got[0].ID != 5 {
		t.Errorf("IDs restarted after Reset: %d", got[0].ID)
	}
}
