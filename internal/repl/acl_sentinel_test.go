package repl_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/redistest"
)

// The users of TestSentinelACLUsers. sentinelUserRules are the rules Redis's Sentinel
// documentation gives for the user Sentinel logs in as (Redis 6.2 and later); replicaUserRules
// the ones it gives for the user a replica logs in as (masteruser).
const (
	adminPass         = "admin-pass"
	sentinelUserRules = "on >sentinel-pass allchannels +multi +slaveof +ping +exec +subscribe +config|rewrite +role +publish +info +client|setname +client|kill +script|kill"
	replicaUserRules  = "on >replica-pass +psync +replconf +ping"
)

// addACLUsers gives a bloomd the Sentinel and replica users.
func addACLUsers(t *testing.T, s *redistest.Server) {
	t.Helper()
	for name, rules := range map[string]string{"sentinel-user": sentinelUserRules, "replica-user": replicaUserRules} {
		args := append([]string{"ACL", "SETUSER", name}, strings.Fields(rules)...)
		if _, err := s.Do(args...); err != nil {
			t.Fatalf("%s: %q: %v", s.Addr, args, err)
		}
	}
}

// aclDenials returns the entries of a server's ACL LOG, or fails the test.
func aclDenials(t *testing.T, s *redistest.Server) string {
	t.Helper()
	out, err := s.Do("ACL", "LOG")
	if err != nil {
		t.Fatalf("%s: ACL LOG: %v", s.Addr, err)
	}
	return out
}

// TestSentinelACLUsers runs a bloomd primary and replica whose default user is the admin, a
// replica that logs in to its primary as a user that may only replicate (masteruser,
// masterauth), and a redis-sentinel that logs in as a user with only the commands Redis
// documents for Sentinel (sentinel auth-user, auth-pass). Sentinel sees both servers, the
// primary is killed, and Sentinel still promotes the replica; no server logs a denial.
func TestSentinelACLUsers(t *testing.T) {
	needSentinel(t)
	redistest.Require(t)
	primary := startBloomdAuth(t, adminPass)
	addACLUsers(t, primary)
	replica := startBloomdAuth(t, adminPass, "replicaof "+strings.Replace(primary.Addr, ":", " ", 1),
		"masteruser replica-user", "masterauth replica-pass")
	addACLUsers(t, replica)
	eventually(t, 15*time.Second, "the replica logs in as replica-user and syncs", func() bool { return info(replica, "master_link_status") == "up" })
	// A replica with the wrong password is refused, and the primary logs the failed login of
	// replica-user: replicas log in as masteruser.
	wrong := startBloomdAuth(t, adminPass, "replicaof "+strings.Replace(primary.Addr, ":", " ", 1),
		"masteruser replica-user", "masterauth wrong-pass")
	eventually(t, 15*time.Second, "the primary logs the refused login of replica-user", func() bool {
		log := aclDenials(t, primary)
		return strings.Contains(log, "\nreason\nauth\n") && strings.Contains(log, "\nusername\nreplica-user\n")
	})
	if got := info(wrong, "master_link_status"); got != "down" {
		t.Errorf("a replica with the wrong masterauth: master_link_status %q", got)
	}
	wrong.Close()
	primary.Do("ACL", "LOG", "RESET")

	s := startSentinel(t, primary.Addr, 1,
		"sentinel down-after-milliseconds mymaster 2000",
		"sentinel auth-user mymaster sentinel-user",
		"sentinel auth-pass mymaster sentinel-pass")
	eventually(t, 30*time.Second, "Sentinel logs in to the primary and finds the replica", func() bool { return sentinelField(s, "num-slaves") == "1" })
	eventually(t, 30*time.Second, "Sentinel logs in to the replica and reads its INFO", func() bool {
		out, err := s.Do("SENTINEL", "REPLICAS", "mymaster")
		return err == nil && strings.Contains(out, "\nflags\nslave\n") && strings.Contains(out, "\nmaster-link-status\nok\n")
	})
	if flags := sentinelField(s, "flags"); flags != "master" {
		t.Errorf("Sentinel's flags for the primary: %q", flags)
	}
	clients, _ := primary.Do("CLIENT", "LIST")
	if !strings.Contains(clients, " user=sentinel-user ") {
		t.Errorf("the primary's CLIENT LIST shows no connection of sentinel-user:\n%s", clients)
	}
	for _, srv := range []*redistest.Server{primary, replica} {
		if log := aclDenials(t, srv); log != "" {
			t.Errorf("%s denied Sentinel or the replica something:\n%s", srv.Addr, log)
		}
	}

	old := primary.Addr
	primary.Kill()
	eventually(t, 30*time.Second, "Sentinel promotes the replica", func() bool {
		out, err := s.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster")
		return err == nil && strings.Replace(out, "\n", ":", 1) == replica.Addr
	})
	if old == replica.Addr {
		t.Fatal("the replica has the primary's address")
	}
	eventually(t, 15*time.Second, "the promoted replica is a primary", func() bool { return info(replica, "role") == "master" })
	if log := aclDenials(t, replica); log != "" {
		t.Errorf("the promoted replica denied Sentinel something during the failover:\n%s", log)
	}
}
