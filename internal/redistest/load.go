package redistest

import (
	"io"
	"net"
	"sync"
	"testing"

	"github.com/bloomd/bloom/internal/resp"
)

// PipelinedLoad sends about n commands to the server at addr over conns connections, depth
// commands per pipelined batch, each connection waiting for a batch's replies before it sends
// the next, and returns how many commands it sent (a multiple of depth per connection, at
// least one batch each). mk makes command i; every command must be answered by a RESP integer
// of one digit (":0\r\n" or ":1\r\n", as BF.ADD and BF.EXISTS are), which is how the replies
// are counted without parsing them. The commands are encoded once before any is sent, as 64
// distinct batches used in turn, so that the client allocates nothing per command and a
// benchmark's allocations are the server's. Errors are reported through tb.
func PipelinedLoad(tb testing.TB, addr string, conns, depth, n int, mk func(i int) [][]byte) int {
	const batches = 64
	enc := make([][]byte, batches)
	for i := range enc {
		for j := range depth {
			enc[i] = resp.AppendCommand(enc[i], mk(i*depth+j)...)
		}
	}
	per := max(n/conns, depth)
	var wg sync.WaitGroup
	for k := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				tb.Error(err)
				return
			}
			defer nc.Close()
			buf := make([]byte, 4*depth)
			for i := 0; i < per; i += depth {
				if _, err := nc.Write(enc[(k+i/depth)%batches]); err != nil {
					tb.Error(err)
					return
				}
				if _, err := io.ReadFull(nc, buf); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return (per + depth - 1) / depth * depth * conns
}
