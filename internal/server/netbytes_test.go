package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// INFO's total_net_input_bytes and total_net_output_bytes count every byte read from and written
// to clients: a known exchange moves them by exactly its size, on both I/O modes.
func TestNetBytes(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		s := startServer(t, nil)
		dialRaw := func() (net.Conn, *bufio.Reader) {
			nc, err := net.Dial("tcp", s.addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			nc.SetDeadline(time.Now().Add(10 * time.Second))
			return nc, bufio.NewReader(nc)
		}
		const info = "*2\r\n$4\r\nINFO\r\n$5\r\nstats\r\n"
		b, br := dialRaw()
		// stats sends INFO stats on b and returns the two counters and the reply's raw size.
		stats := func() (in, out int64, size int) {
			if _, err := io.WriteString(b, info); err != nil {
				t.Fatal(err)
			}
			head, err := br.ReadString('\n')
			if err != nil || head[0] != '$' {
				t.Fatalf("INFO: %q %v", head, err)
			}
			n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
			body := make([]byte, n+2)
			if _, err := io.ReadFull(br, body); err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(body), "\r\n") {
				if v, ok := strings.CutPrefix(line, "total_net_input_bytes:"); ok {
					in, _ = strconv.ParseInt(v, 10, 64)
				}
				if v, ok := strings.CutPrefix(line, "total_net_output_bytes:"); ok {
					out, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			return in, out, len(head) + n + 2
		}
		in0, out0, size0 := stats()

		// A pipeline of known size from another client, and its replies, read in full.
		a, ar := dialRaw()
		var req strings.Builder
		for i := range 50 {
			fmt.Fprintf(&req, "*3\r\n$6\r\nBF.ADD\r\n$1\r\nf\r\n$%d\r\n%d\r\n", len(strconv.Itoa(i)), i)
		}
		req.WriteString("*1\r\n$4\r\nPING\r\n")
		if _, err := io.WriteString(a, req.String()); err != nil {
			t.Fatal(err)
		}
		replied := 0
		for {
			line, err := ar.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			replied += len(line)
			if line == "+PONG\r\n" {
				break
			}
		}

		// /metrics reads the same counters. A reply is counted just after its write returns,
		// so the client may see it a moment before the count does.
		wantIn, wantOut := in0+int64(req.Len()), out0+int64(size0+replied)
		mi := s.Info()
		for deadline := time.Now().Add(2 * time.Second); mi.NetOutputBytes != wantOut && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
			mi = s.Info()
		}
		if mi.NetInputBytes != wantIn || mi.NetOutputBytes != wantOut {
			t.Errorf("metrics: in %d out %d, want %d and %d", mi.NetInputBytes, mi.NetOutputBytes, wantIn, wantOut)
		}

		in1, out1, _ := stats()
		if got, want := in1-in0, int64(req.Len()+len(info)); got != want {
			t.Errorf("total_net_input_bytes grew by %d, want %d", got, want)
		}
		if got, want := out1-out0, int64(replied+size0); got != want {
			t.Errorf("total_net_output_bytes grew by %d, want %d", got, want)
		}
	})
}
