package repl

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/resp"
)

// recordingHost counts what a replica did with its primary's input.
type recordingHost struct {
	nopHost
	mu      sync.Mutex
	applied int
	loads   int
}

func (h *recordingHost) Apply(argv [][]byte) {
	h.mu.Lock()
	h.applied++
	h.mu.Unlock()
}

func (h *recordingHost) Load(p *Payload) (Loaded, error) {
	_, err := p.Copy(io.Discard)
	h.mu.Lock()
	h.loads++
	h.mu.Unlock()
	return Loaded{}, err
}

// fakePrimary answers a replica's handshake, then sends reply (the answer to PSYNC and what
// follows it) and closes.
func fakePrimary(nc net.Conn, reply []byte) {
	defer nc.Close()
	rd := resp.NewReader(nc)
	for {
		argv, err := rd.ReadCommand()
		if err != nil {
			return
		}
		switch strings.ToUpper(string(argv[0])) {
		case "PING":
			nc.Write([]byte("+PONG\r\n"))
		case "PSYNC":
			nc.Write(reply)
			return
		default:
			nc.Write([]byte("+OK\r\n"))
		}
	}
}

// FuzzPrimaryReply feeds a replica arbitrary bytes as its primary's answer to PSYNC and the
// stream after it: the link must fail with an error or follow, never panic, and never hand the
// host a snapshot of another size than announced.
func FuzzPrimaryReply(f *testing.F) {
	id := strings.Repeat("a", 40)
	f.Add([]byte("+FULLRESYNC " + id + " 0\r\n$0\r\n*1\r\n$4\r\nPING\r\n"))
	f.Add([]byte("+FULLRESYNC " + id + " 5\r\n\n\n$3\r\nabc*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"))
	f.Add([]byte("+CONTINUE " + id + "\r\n*3\r\n$8\r\nREPLCONF\r\n$6\r\nGETACK\r\n$1\r\n*\r\n"))
	f.Add([]byte("+CONTINUE\r\n*1\r\n$-1\r\n"))
	f.Add([]byte("-NOMASTERLINK Can't SYNC while not connected with my master\r\n"))
	f.Add([]byte("+FULLRESYNC " + id + " -1\r\n$99999999999999\r\n"))
	mark := strings.Repeat("m", 40)
	f.Add([]byte("+FULLRESYNC " + id + " 7\r\n$EOF:" + mark + "\r\nREDIS0010\xff" + mark + "*1\r\n$4\r\nPING\r\n"))
	f.Add([]byte("+FULLRESYNC " + id + " 7\r\n$EOF:" + mark[:20] + "\r\n"))
	f.Add([]byte("+CONTINUE " + id + "\r\n*1\r\n$5\r\nMULTI\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n"))
	f.Add([]byte("+CONTINUE " + id + "\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n3\r\n*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n*1\r\n$4\r\nEXEC\r\n"))
	f.Add([]byte("+CONTINUE " + id + "\r\n\n\nSET a b\r\n"))
	f.Add([]byte("+CONTINUE " + id + "\r\n*2\r\n$6\r\nSELECT\r\n$-1\r\n"))
	f.Fuzz(func(t *testing.T, reply []byte) {
		host := &recordingHost{}
		cfg := DefaultConfig()
		cfg.Timeout = 1
		r := New(host, cfg, nil)
		defer r.Close()
		r.dial = func(string, time.Duration) (net.Conn, error) {
			a, b := net.Pipe()
			go fakePrimary(b, reply)
			return a, nil
		}
		m := &masterLink{r: r, host: "primary", port: 1, done: make(chan struct{}), downSince: time.Now()}
		r.mu.Lock()
		r.master = m
		r.mu.Unlock()
		r.replicaFlag.Store(true)
		if err := m.session("primary:1"); err == nil {
			t.Fatal("a session that ended returned no error")
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.offset < 0 || r.backlog.histlen < 0 || r.backlog.histlen > r.backlog.size {
			t.Fatalf("offset %d, histlen %d after the session", r.offset, r.backlog.histlen)
		}
	})
}
