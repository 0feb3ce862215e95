package pubsub

import (
	"path"
	"sync"
	"testing"
)

type recorder struct {
	proto int
	mu    sync.Mutex
	got   []string
}

func (r *recorder) Proto() int { return r.proto }
func (r *recorder) Push(frame []byte, self bool) {
	r.mu.Lock()
	r.got = append(r.got, string(frame))
	r.mu.Unlock()
}

func match(pattern, s []byte) bool {
	ok, _ := path.Match(string(pattern), string(s))
	return ok
}

func TestHub(t *testing.T) {
	h := New(match)
	r2, r3 := &recorder{proto: 2}, &recorder{proto: 3}
	c2, c3 := h.NewClient(r2), h.NewClient(r3)
	if got := string(c2.Subscribe(nil, [][]byte{[]byte("a"), []byte("b")})); got != "*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n" {
		t.Errorf("Subscribe reply %q", got)
	}
	if got := string(c3.PSubscribe(nil, [][]byte{[]byte("a*")})); got != ">3\r\n$10\r\npsubscribe\r\n$2\r\na*\r\n:1\r\n" {
		t.Errorf("RESP3 PSubscribe reply %q", got)
	}
	if n := h.Publish([]byte("a"), []byte("m"), nil); n != 2 {
		t.Errorf("Publish reached %d", n)
	}
	if len(r2.got) != 1 || r2.got[0] != "*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nm\r\n" {
		t.Errorf("RESP2 frames %q", r2.got)
	}
	if len(r3.got) != 1 || r3.got[0] != ">4\r\n$8\r\npmessage\r\n$2\r\na*\r\n$1\r\na\r\n$1\r\nm\r\n" {
		t.Errorf("RESP3 frames %q", r3.got)
	}
	if got := h.Channels(nil); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Errorf("Channels %q", got)
	}
	if got := string(c2.Unsubscribe(nil, nil)); got != "*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n" {
		t.Errorf("Unsubscribe-all reply %q", got)
	}
	if got := string(c3.PUnsubscribe(nil, [][]byte{[]byte("zz")})); got != ">3\r\n$12\r\npunsubscribe\r\n$2\r\nzz\r\n:1\r\n" {
		t.Errorf("PUnsubscribe of an unknown pattern %q", got)
	}
	c3.Close()
	if h.NumPat() != 0 || h.NumSub([]byte("a")) != 0 || h.Publish([]byte("a"), nil, nil) != 0 {
		t.Error("subscriptions left after Unsubscribe and Close")
	}
}

// TestHubConcurrent publishes while clients subscribe and leave (run with -race).
func TestHubConcurrent(t *testing.T) {
	h := New(match)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := h.NewClient(&recorder{proto: 2 + i%2})
			for range 200 {
				cl.Subscribe(nil, [][]byte{[]byte("c")})
				cl.PSubscribe(nil, [][]byte{[]byte("c*")})
				h.Publish([]byte("c"), []byte("x"), nil)
				cl.Unsubscribe(nil, nil)
				cl.Close()
			}
		}()
	}
	wg.Wait()
	if h.NumSub([]byte("c")) != 0 || h.NumPat() != 0 {
		t.Error("subscriptions left")
	}
}
