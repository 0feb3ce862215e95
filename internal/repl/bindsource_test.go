package repl_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// replicaAddr returns the address a primary's INFO replication lists its replica with listening
// port port under ("ip:port"), or "".
func replicaAddr(s *redistest.Server, port string) string {
	out, _ := s.Do("INFO", "replication")
	for _, l := range strings.Split(out, "\r\n") {
		if strings.HasPrefix(l, "slave") && strings.Contains(l, ",port="+port+",") {
			ip := l[strings.Index(l, "ip=")+3:]
			return ip[:strings.IndexByte(ip, ',')] + ":" + port
		}
	}
	return ""
}

// TestBindSourceAddrSentinel runs a primary on 127.0.0.2 and a replica on 127.0.0.3 that binds
// its link to the primary to its own address (bind-source-addr, no replica-announce-ip): the
// primary lists the replica under that address, and a real Sentinel, which learns the replicas
// from the primary's INFO, finds it there and connects to it. A replica without the setting is
// listed under the address the kernel picks for the link (127.0.0.1), where it does not listen.
func TestBindSourceAddrSentinel(t *testing.T) {
	needSentinel(t)
	redistest.Require(t)
	primary := startBloomdAt(t, "127.0.0.2", "")
	_, pport, _ := net.SplitHostPort(primary.Addr)
	replica := startBloomdAt(t, "127.0.0.3", "", "replicaof 127.0.0.2 "+pport, "bind-source-addr 127.0.0.3")
	unbound := startBloomdAt(t, "127.0.0.4", "", "replicaof 127.0.0.2 "+pport)
	eventually(t, 15*time.Second, "replicas online", func() bool { return info(primary, "connected_slaves") == "2" })
	if v, err := replica.Do("CONFIG", "GET", "bind-source-addr"); err != nil || v != "bind-source-addr\n127.0.0.3" {
		t.Errorf("CONFIG GET bind-source-addr: %q %v", v, err)
	}
	if got := replicaAddr(primary, portOf(replica)); got != replica.Addr {
		t.Errorf("the primary lists the replica with bind-source-addr as %q, want %q", got, replica.Addr)
	}
	if got := replicaAddr(primary, portOf(unbound)); got == unbound.Addr || got == "" {
		t.Errorf("the primary lists the replica without bind-source-addr as %q (the kernel's address for its link, not its own, expected)", got)
	}

	s := startSentinel(t, primary.Addr, 1)
	eventually(t, 30*time.Second, "Sentinel finds the replica at its address and reads its INFO", func() bool {
		out, err := s.Do("SENTINEL", "REPLICAS", "mymaster")
		if err != nil {
			return false
		}
		for _, r := range strings.Split(out, "\nname\n") {
			if strings.Contains(r, "\nip\n127.0.0.3\nport\n"+portOf(replica)+"\n") &&
				strings.Contains(r, "\nflags\nslave\n") && strings.Contains(r, "\nmaster-link-status\nok\n") {
				return true
			}
		}
		return false
	})
}

func portOf(s *redistest.Server) string {
	_, p, _ := net.SplitHostPort(s.Addr)
	return p
}

// TestBindSourceAddrBestEffort gives a replica a bind-source-addr that is no address of this
// host (192.0.2.1, TEST-NET-1): as with Redis 7.0 (its best-effort binding), the replica still
// connects to its primary, from the address the system picks.
func TestBindSourceAddrBestEffort(t *testing.T) {
	for _, kind := range []string{"redis", "bloomd"} {
		t.Run(kind, func(t *testing.T) {
			redistest.Require(t)
			var primary, replica *redistest.Server
			if kind == "redis" {
				primary, replica = redistest.New(t, nil), redistest.New(t, nil)
			} else {
				primary, replica = startBloomd(t), startBloomd(t)
			}
			if _, err := replica.Do("CONFIG", "SET", "bind-source-addr", "192.0.2.1"); err != nil {
				t.Fatal(err)
			}
			if _, err := replica.Do("REPLICAOF", "127.0.0.1", portOf(primary)); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, "the replica's link is up", func() bool { return info(replica, "master_link_status") == "up" })
			if got := replicaAddr(primary, portOf(replica)); got != replica.Addr {
				t.Errorf("the primary lists the replica as %q, want %q", got, replica.Addr)
			}
		})
	}
}
