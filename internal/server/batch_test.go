package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/resp"
	"github.com/bloomd/bloom/redisbloom"
)

// TestPipelinedBatch sends pipelined batches that mix single-item BF.ADD and BF.EXISTS on the
// connection's filter (whose items an event loop hashes once, when it prepares the batch's
// memory) with requests on another filter, other commands, an empty item, a transaction and more
// requests than the loop prepares, and checks every reply against chains fed the same items one
// by one.
func TestPipelinedBatch(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		s := startServer(t, nil)
		c := dial(t, s.addr())
		ref := map[string]*redisbloom.Chain{}
		for _, key := range []string{"bf", "other"} {
			c.do("BF.RESERVE", key, "0.01", "1000")
			ref[key], _ = redisbloom.NewChain(1000, 0.01, 2, false, nil)
		}
		bit := func(b bool) string {
			if b {
				return ":1\r\n"
			}
			return ":0\r\n"
		}
		run := func(cmd []string) string {
			switch strings.ToUpper(cmd[0]) {
			case "BF.ADD":
				added, err := ref[cmd[1]].Add([]byte(cmd[2]))
				if err != nil {
					t.Fatal(err)
				}
				return bit(added)
			case "BF.EXISTS":
				return bit(ref[cmd[1]].Exists([]byte(cmd[2])))
			}
			return "+PONG\r\n"
		}
		for round := range 4 {
			var in []byte
			var want strings.Builder
			var multi []string
			for i := range 45 {
				item := fmt.Sprintf("item:%d:%d", round, i)
				var cmd []string
				switch i % 6 {
				case 0:
					cmd = []string{"BF.ADD", "bf", item}
				case 1:
					cmd = []string{"bf.exists", "bf", fmt.Sprintf("item:%d:%d", round, i-1)}
				case 2:
					cmd = []string{"BF.EXISTS", "bf", item}
				case 3:
					cmd = []string{"BF.ADD", "other", item}
				case 4:
					cmd = []string{"BF.ADD", "bf", fmt.Sprintf("item:%d:%d", round, i-4)}
				case 5:
					cmd = []string{"PING"}
				}
				if i == 20 {
					cmd = []string{"BF.ADD", "bf", ""}
				}
				if round == 2 && i >= 10 && i < 20 {
					// A transaction: its commands run, on copies, when EXEC comes.
					if i == 10 {
						in = resp.AppendCommand(in, []byte("MULTI"))
						want.WriteString("+OK\r\n")
					}
					in = resp.AppendCommand(in, bytesArgs(cmd)...)
					want.WriteString("+QUEUED\r\n")
					multi = append(multi, run(cmd))
					if i == 19 {
						in = resp.AppendCommand(in, []byte("EXEC"))
						fmt.Fprintf(&want, "*%d\r\n%s", len(multi), strings.Join(multi, ""))
					}
					continue
				}
				in = resp.AppendCommand(in, bytesArgs(cmd)...)
				want.WriteString(run(cmd))
			}
			if _, err := c.nc.Write(in); err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			for got.Len() < want.Len() {
				raw, _ := c.read()
				got.Write(raw)
			}
			if got.String() != want.String() {
				t.Fatalf("round %d: replies\n%q\nwant\n%q", round, got.String(), want.String())
			}
		}
	})
}

func bytesArgs(args []string) [][]byte {
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return b
}
