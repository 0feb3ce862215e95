package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/acl"
	"github.com/bloomd/bloom/internal/redistest"
	"github.com/bloomd/bloom/internal/resp"
	"github.com/redis/go-redis/v9"
)

// mapOf turns a flat RESP2 array of key/value pairs (ACL LOG entries, GETUSER) into a map.
func mapOf(v resp.Value) map[string]resp.Value {
	m := map[string]resp.Value{}
	for i := 0; i+1 < len(v.Elems); i += 2 {
		m[v.Elems[i].Text()] = v.Elems[i+1]
	}
	return m
}

// waitClosed reports whether the server closes c within a few seconds.
func waitClosed(c *rawClient) bool {
	c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.rd.ReadReply()
	return err != nil && !strings.Contains(err.Error(), "timeout")
}

func TestACLDeleteClosesConnections(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		s := startServer(t, nil)
		admin := dial(t, s.addr())
		if v := admin.do("ACL", "SETUSER", "bob", "on", ">pw", "+@all", "~*"); v.Text() != "OK" {
			t.Fatal(v)
		}
		bob := dial(t, s.addr())
		if v := bob.do("AUTH", "bob", "pw"); v.Text() != "OK" {
			t.Fatal(v)
		}
		other := dial(t, s.addr())
		// Changed permissions apply to the next command of a connection already authenticated.
		admin.do("ACL", "SETUSER", "bob", "-get")
		if v := bob.do("GET", "k"); v.Text() != "NOPERM this user has no permissions to run the 'get' command" {
			t.Fatal(v)
		}
		// Off: no new authentication, the connection stays (Redis 7.0).
		admin.do("ACL", "SETUSER", "bob", "off")
		if v := bob.do("PING"); v.Text() != "PONG" {
			t.Fatal(v)
		}
		if v := admin.do("ACL", "DELUSER", "bob"); v.Int != 1 {
			t.Fatal(v)
		}
		if !waitClosed(bob) {
			t.Fatal("deleting the user left its connection open")
		}
		if v := other.do("PING"); v.Text() != "PONG" {
			t.Fatalf("a default user's connection was closed: %v", v)
		}
	})
}

func TestACLLog(t *testing.T) {
	s := startServer(t, nil)
	admin := dial(t, s.addr())
	admin.do("ACL", "SETUSER", "eve", "on", ">pw", "-@all", "+get", "+publish", "+multi", "+discard", "~k*", "&ch")
	eve := dial(t, s.addr())
	eve.do("AUTH", "eve", "wrong")
	eve.do("AUTH", "eve", "pw")
	eve.do("SET", "k", "v")
	eve.do("SET", "k", "v")
	eve.do("GET", "x")
	eve.do("PUBLISH", "news", "m")
	eve.do("MULTI")
	eve.do("DEL", "k")
	eve.do("DISCARD")
	v := admin.do("ACL", "LOG")
	if len(v.Elems) != 5 {
		t.Fatalf("ACL LOG: %v", v)
	}
	want := []struct {
		count                             int64
		reason, context, object, username string
	}{
		{1, "command", "multi", "del", "eve"},
		{1, "channel", "toplevel", "news", "eve"},
		{1, "key", "toplevel", "x", "eve"},
		{2, "command", "toplevel", "set", "eve"}, // the same denial within a minute: one entry
		{1, "auth", "toplevel", "AUTH", "eve"},
	}
	for i, w := range want {
		e := mapOf(v.Elems[i])
		if e["count"].Int != w.count || e["reason"].Text() != w.reason || e["context"].Text() != w.context ||
			e["object"].Text() != w.object || e["username"].Text() != w.username {
			t.Errorf("entry %d: %v, want %+v", i, v.Elems[i], w)
		}
		if ci := e["client-info"].Text(); !strings.Contains(ci, " user=") || strings.Contains(ci, "pw") {
			t.Errorf("entry %d client-info %q", i, ci)
		}
		if age := e["age-seconds"].Text(); age == "" {
			t.Errorf("entry %d has no age", i)
		}
	}
	if strings.Contains(v.String(), "wrong") {
		t.Error("ACL LOG shows a password")
	}
	if v := admin.do("ACL", "LOG", "2"); len(v.Elems) != 2 {
		t.Errorf("ACL LOG 2: %v", v)
	}
	info := admin.do("INFO", "stats").Text()
	for _, f := range []string{"acl_access_denied_auth:1\r\n", "acl_access_denied_cmd:3\r\n", "acl_access_denied_key:1\r\n", "acl_access_denied_channel:1\r\n"} {
		if !strings.Contains(info, f) {
			t.Errorf("INFO stats lacks %q", f)
		}
	}
	if v := admin.do("ACL", "LOG", "RESET"); v.Text() != "OK" {
		t.Fatal(v)
	}
	if v := admin.do("ACL", "LOG"); len(v.Elems) != 0 {
		t.Fatal(v)
	}
}

// TestACLExecRecheck: a command queued while allowed is refused at EXEC if the rules changed.
func TestACLExecRecheck(t *testing.T) {
	s := startServer(t, nil)
	admin := dial(t, s.addr())
	admin.do("ACL", "SETUSER", "q", "on", "nopass", "+@all", "~*")
	q := dial(t, s.addr())
	q.do("AUTH", "q", "x")
	q.do("MULTI")
	q.do("SET", "a", "1")
	q.do("GET", "a")
	admin.do("ACL", "SETUSER", "q", "-set")
	v := q.do("EXEC")
	if len(v.Elems) != 2 || v.Elems[0].Text() != "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand" || !v.Elems[1].Null {
		t.Fatalf("EXEC: %v", v)
	}
}

func TestACLFileSaveLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "users.acl")
	os.WriteFile(path, []byte("user default on nopass ~* &* +@all\nuser ann on #"+strings.Repeat("ab", 32)+" ~a:* -@all +@read\n"), 0o600)
	s := startServer(t, func(c *Config) { c.ACLFile = path })
	c := dial(t, s.addr())
	before := c.do("ACL", "LIST").String()
	if !strings.Contains(before, "user ann on #abab") {
		t.Fatalf("aclfile not loaded at start: %s", before)
	}
	c.do("ACL", "SETUSER", "bob", "on", ">pw", "%R~b:*", "%W~w:*", "&ch", "+@all", "-@dangerous", "+config|get")
	want := c.do("ACL", "LIST").String()
	if v := c.do("ACL", "SAVE"); v.Text() != "OK" {
		t.Fatal(v)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "user bob on #") || strings.Contains(string(data), "pw ") {
		t.Fatalf("saved file:\n%s", data)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*.tmp-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
	bob := dial(t, s.addr())
	bob.do("AUTH", "bob", "pw")
	c.do("ACL", "DELUSER", "ann")
	if v := c.do("ACL", "LOAD"); v.Text() != "OK" {
		t.Fatal(v)
	}
	if got := c.do("ACL", "LIST").String(); got != want {
		t.Fatalf("ACL LOAD after SAVE:\n%s\nwant\n%s", got, want)
	}
	// ACL LOAD replaces every user: connections of users other than default are closed.
	if !waitClosed(bob) {
		t.Error("ACL LOAD left a connection of a replaced user open")
	}
	// A malformed file is refused with Redis's message and changes nothing.
	os.WriteFile(path, []byte("user carol on +nosuch\nuser dave on ~k* ~* ~x\n"), 0o600)
	v := c.do("ACL", "LOAD")
	wantErr := "ERR " + path + ":1: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
		path + ":2: Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns. " +
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	if v.Text() != wantErr {
		t.Fatalf("got  %s\nwant %s", v.Text(), wantErr)
	}
	if got := c.do("ACL", "LIST").String(); got != want {
		t.Fatal("a refused ACL LOAD changed the users")
	}
	os.Remove(path)
	if v := c.do("ACL", "LOAD"); !strings.HasPrefix(v.Text(), "ERR Error loading ACLs, opening file '"+path+"': No such file or directory") {
		t.Fatal(v)
	}
	// A malformed file at start stops the server from starting.
	os.WriteFile(path, []byte("user x on +nosuch\n"), 0o600)
	cfg := DefaultConfig()
	cfg.Logger, cfg.ACLFile, cfg.Port = discardLogger(), path, 0
	cfg.TLSPort = 0
	cfg.Port = 1
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "Unknown command or category name in ACL") {
		t.Errorf("New with a malformed aclfile: %v", err)
	}
}

func TestACLConfigUsers(t *testing.T) {
	var cfg Config = DefaultConfig()
	conf := "requirepass secret\nuser loader on >lpw ~jobs:* -@all +@bloom\nuser \"checker\" on >cpw %R~jobs:* -@all +bf.exists +bf.mexists +bf.info\n"
	if err := ParseConfig(strings.NewReader(conf), "bloomd.conf", &cfg); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.Requirepass, c.Users = cfg.Requirepass, cfg.Users })
	c := dial(t, s.addr())
	if v := c.do("PING"); !strings.HasPrefix(v.Text(), "NOAUTH") {
		t.Fatal(v)
	}
	if v := c.do("AUTH", "secret"); v.Text() != "OK" {
		t.Fatal("requirepass is the default user's password:", v)
	}
	if v := c.do("ACL", "LIST").String(); !strings.Contains(v, "user checker on #") || !strings.Contains(v, "%R~jobs:* resetchannels -@all +bf.exists +bf.info +bf.mexists") && !strings.Contains(v, "-@all +bf.exists +bf.mexists +bf.info") {
		t.Fatal(v)
	}
	l := dial(t, s.addr())
	l.do("AUTH", "loader", "lpw")
	if v := l.do("BF.ADD", "jobs:1", "x"); v.Int != 1 {
		t.Fatal(v)
	}
	if v := l.do("BF.ADD", "other", "x"); !v.IsError() {
		t.Fatal(v)
	}
	ck := dial(t, s.addr())
	ck.do("AUTH", "checker", "cpw")
	if v := ck.do("BF.EXISTS", "jobs:1", "x"); v.Int != 1 {
		t.Fatal(v)
	}
	if v := ck.do("BF.ADD", "jobs:1", "y"); v.Text() != "NOPERM this user has no permissions to run the 'bf.add' command" {
		t.Fatal(v)
	}
	// CONFIG SET requirepass changes the default user's password.
	c.do("CONFIG", "SET", "requirepass", "other")
	d := dial(t, s.addr())
	if v := d.do("AUTH", "secret"); !v.IsError() {
		t.Fatal(v)
	}
	if v := d.do("AUTH", "default", "other"); v.Text() != "OK" {
		t.Fatal(v)
	}
	if v := d.do("CLIENT", "INFO"); !strings.Contains(v.Text(), " user=default ") {
		t.Fatal(v)
	}
	if v := d.do("CLIENT", "LIST"); !strings.Contains(v.Text(), " user=checker ") || !strings.Contains(v.Text(), " user=loader ") {
		t.Fatal(v)
	}
	if v := d.do("CLIENT", "KILL", "USER", "loader"); v.Int != 1 || !waitClosed(l) {
		t.Fatalf("CLIENT KILL USER: %v", v)
	}

	// user lines and aclfile together are refused, as Redis refuses them.
	cfg.ACLFile = "users.acl"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "please define either an ACL file or declare users directly in your redis.conf, but not both") {
		t.Errorf("Validate: %v", err)
	}
}

func TestACLMetricsAuth(t *testing.T) {
	s := startServer(t, func(c *Config) { c.Requirepass = "pw" })
	base := serveMetricsFree(t, s)
	c := dial(t, s.addr())
	c.do("AUTH", "pw")
	c.do("ACL", "SETUSER", "mon", "on", ">m", "-@all", "+info")
	c.do("ACL", "SETUSER", "app", "on", ">a", "-@all", "+bf.add", "~*")
	for _, x := range []struct {
		user, pass string
		code       int
	}{{"", "", 401}, {"default", "pw", 200}, {"mon", "m", 200}, {"mon", "x", 401}, {"app", "a", 401}, {"nobody", "pw", 401}} {
		if code, _ := get(t, base+"/metrics", x.user, x.pass); code != x.code {
			t.Errorf("%s/%s: %d, want %d", x.user, x.pass, code, x.code)
		}
	}
	_, body := get(t, base+"/metrics", "mon", "m")
	if !strings.Contains(body, `bloomd_acl_access_denied_total{reason="auth"} 2`) {
		t.Errorf("/metrics lacks the auth denials:\n%s", body)
	}
}

// TestACLCategoriesMatchRedis compares COMMAND INFO's categories and key specs of every
// command bloomd shares with Redis against a live redis-server 7.0.
func TestACLCategoriesMatchRedis(t *testing.T) {
	rs := redistest.New(t, nil)
	s := startServer(t, nil)
	b, r := dial(t, s.addr()), dial(t, rs.Addr)
	var walk func(v resp.Value, into map[string]string)
	walk = func(v resp.Value, into map[string]string) {
		if len(v.Elems) < 10 {
			return
		}
		into[v.Elems[0].Text()] = v.Elems[6].String() + " " + v.Elems[8].String()
		for _, sub := range v.Elems[9].Elems {
			walk(sub, into)
		}
	}
	names := b.do("COMMAND", "LIST")
	n := 0
	for _, nv := range names.Elems {
		name := nv.Text()
		if strings.HasPrefix(name, "bf.") || strings.HasPrefix(name, "cf.") {
			continue
		}
		mine, theirs := map[string]string{}, map[string]string{}
		walk(b.do("COMMAND", "INFO", name).Elems[0], mine)
		walk(r.do("COMMAND", "INFO", name).Elems[0], theirs)
		for sub, m := range mine {
			th, ok := theirs[sub]
			if !ok {
				continue // a Redis 7.2 subcommand (CLIENT SETINFO, CLIENT NO-TOUCH)
			}
			n++
			if m != th {
				t.Errorf("%s: bloomd %s\nredis-server %s", sub, m, th)
			}
		}
	}
	if n < 80 {
		t.Errorf("only %d commands compared", n)
	}
}

// TestACLReplicaMasterUser: a replica logs in to a primary with masteruser and masterauth, as a
// user allowed only what replication needs.
func TestACLReplicaMasterUser(t *testing.T) {
	ps := startServer(t, func(c *Config) {
		c.Dir = t.TempDir()
		c.Users = []acl.Definition{
			{Name: "default", Rules: []string{"on", ">adminpw", "~*", "&*", "+@all"}},
			{Name: "repl", Rules: []string{"on", ">replpw", "-@all", "+psync", "+replconf", "+ping"}},
		}
	})
	p := dial(t, ps.addr())
	p.do("AUTH", "adminpw")
	p.do("BF.ADD", "f", "x")
	rs := startServer(t, func(c *Config) {
		c.Dir = t.TempDir()
		c.Replication.MasterUser, c.Replication.MasterAuth = "repl", "replpw"
	})
	r := dial(t, rs.addr())
	if v := r.do("REPLICAOF", "127.0.0.1", portOf(ps)); v.Text() != "OK" {
		t.Fatal(v)
	}
	waitSynced(t, p, r)
	if v := r.do("BF.EXISTS", "f", "x"); v.Int != 1 {
		t.Fatalf("replica: %v", v)
	}
	if v := p.do("ACL", "LOG"); len(v.Elems) != 0 {
		t.Errorf("the replica's login was denied: %v", v)
	}
}

// TestACLConfigRewrite: without an aclfile, CONFIG REWRITE writes the users as user lines, as
// Redis does, and the file reads back to the same users.
func TestACLConfigRewrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "bloomd.conf")
	os.WriteFile(path, []byte("# users\nuser old on nopass ~* +@all\nport 6379\nuser old2 off\n"), 0o644)
	cfg := DefaultConfig()
	if err := ParseConfig(strings.NewReader("user old on nopass ~* +@all\nuser old2 off\n"), path, &cfg); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *Config) { c.Dir, c.Users = dir, cfg.Users })
	s.configFile = path
	c := dial(t, s.addr())
	c.do("ACL", "DELUSER", "old2")
	c.do("ACL", "SETUSER", "ann", "on", ">pw", "%R~a:*", "-@all", "+bf.exists")
	if v := c.do("CONFIG", "REWRITE"); v.Text() != "OK" {
		t.Fatal(v)
	}
	got, _ := os.ReadFile(path)
	want := "# users\nuser ann on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 %R~a:* resetchannels -@all +bf.exists\n" +
		"user old on nopass ~* resetchannels +@all\nport 6379\n# Generated by CONFIG REWRITE\ndir " + dir + "\n"
	if string(got) != want {
		t.Fatalf("rewritten:\n%s\nwant:\n%s", got, want)
	}
	back := DefaultConfig()
	if err := ParseConfig(strings.NewReader(string(got)), path, &back); err != nil || len(back.Users) != 2 {
		t.Fatalf("%v %v", err, back.Users)
	}
	s2 := startServer(t, func(c *Config) { c.Users = back.Users })
	if got, want := dial(t, s2.addr()).do("ACL", "LIST").String(), c.do("ACL", "LIST").String(); got != want {
		t.Errorf("reloaded users:\n%s\nwant\n%s", got, want)
	}
}

// TestACLRevokedChannelsCloseSubscribers: taking a channel away from a user closes its
// connections subscribed to it, as Redis 7.0 does; the others stay.
func TestACLRevokedChannelsCloseSubscribers(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		s := startServer(t, nil)
		admin := dial(t, s.addr())
		admin.do("ACL", "SETUSER", "sub", "on", "nopass", "+@all", "&news.*", "&other")
		a, b := dial(t, s.addr()), dial(t, s.addr())
		a.do("AUTH", "sub", "x")
		b.do("AUTH", "sub", "x")
		a.do("SUBSCRIBE", "news.a")
		b.do("SUBSCRIBE", "other")
		if v := b.do("PSUBSCRIBE", "news.*"); len(v.Elems) != 3 {
			t.Fatal(v)
		}
		if v := b.do("PSUBSCRIBE", "n*"); !strings.HasPrefix(v.Text(), "NOPERM") {
			t.Fatalf("a pattern must equal an allowed pattern: %v", v)
		}
		b.do("PUNSUBSCRIBE", "news.*")
		admin.do("ACL", "SETUSER", "sub", "resetchannels", "&other")
		if !waitClosed(a) {
			t.Fatal("a subscriber to a revoked channel stayed connected")
		}
		if v := admin.do("PUBLISH", "other", "m"); v.Int != 1 {
			t.Fatalf("the other subscriber was closed: %v", v)
		}
	})
}

// TestACLGoRedisUsername: go-redis's Username logs in as an ACL user (HELLO AUTH in RESP3, AUTH
// in RESP2), and a denial reaches the application as Redis's NOPERM error.
func TestACLGoRedisUsername(t *testing.T) {
	s := startServer(t, func(c *Config) {
		c.Users = []acl.Definition{{Name: "loader", Rules: []string{"on", ">lpw", "~jobs:*", "-@all", "+@bloom", "+ping"}}}
	})
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		rdb := redis.NewClient(&redis.Options{Addr: s.addr(), Protocol: proto, Username: "loader", Password: "lpw", DialTimeout: 5 * time.Second})
		t.Cleanup(func() { rdb.Close() })
		if err := rdb.BFAdd(ctx, "jobs:1", "x").Err(); err != nil {
			t.Fatalf("RESP%d: %v", proto, err)
		}
		err := rdb.BFAdd(ctx, "other", "x").Err()
		if err == nil || err.Error() != "NOPERM this user has no permissions to access one of the keys used as arguments" {
			t.Fatalf("RESP%d: %v", proto, err)
		}
		if err := rdb.Get(ctx, "jobs:1").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM this user has no permissions to run the 'get' command") {
			t.Fatalf("RESP%d: %v", proto, err)
		}
		bad := redis.NewClient(&redis.Options{Addr: s.addr(), Protocol: proto, Username: "loader", Password: "no", DialTimeout: 5 * time.Second})
		t.Cleanup(func() { bad.Close() })
		if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Fatalf("RESP%d with a wrong password: %v", proto, err)
		}
	}
}

// TestACLUserDeletedWhileAuthenticating: a user deleted by another client after AUTH checked
// its password, but before the connection became that user's (so that ACL DELUSER's closing of
// the user's connections missed it), gives the connection none of its permissions.
func TestACLUserDeletedWhileAuthenticating(t *testing.T) {
	forEachIOMode(t, func(t *testing.T) {
		s := startServer(t, func(c *Config) {
			c.Requirepass = "adminpw"
			c.Users = []acl.Definition{{Name: "bob", Rules: []string{"on", ">bobpw", "~*", "&*", "+@all"}}}
		})
		defer testHookAuthenticated.Store(nil)
		for _, login := range [][]string{{"AUTH", "bob", "bobpw"}, {"HELLO", "2", "AUTH", "bob", "bobpw"}} {
			deleted := make(chan struct{})
			hook := func(a *acl.Account) {
				if a.Name() == "bob" {
					s.acl.users.Delete([]string{"bob"})
					close(deleted)
				}
			}
			testHookAuthenticated.Store(&hook)
			admin := dial(t, s.addr())
			admin.do("AUTH", "adminpw")
			admin.do("DEL", "k")
			admin.do("ACL", "SETUSER", "bob", "on", ">bobpw", "~*", "&*", "+@all")
			c := dial(t, s.addr())
			c.send(bytesArgs(login)...)
			c.send(bytesArgs([]string{"SET", "k", "by-bob"})...)
			c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			<-deleted
			var replies []string
			for range 2 {
				v, err := c.rd.ReadReply()
				if err != nil {
					break // the connection was closed: as good as a refusal
				}
				replies = append(replies, v.String())
			}
			if v := admin.do("GET", "k"); !v.Null {
				t.Errorf("%q: the deleted user's connection wrote k (%v); replies %q", login, v, replies)
			}
			if len(replies) > 0 && !strings.Contains(replies[0], "WRONGPASS") {
				t.Errorf("%q answered %q for a user deleted while it authenticated", login, replies[0])
			}
		}
		testHookAuthenticated.Store(nil)

		// A connection of the user that the deletion's closing of connections did not reach
		// (the registry's OnChange left out here) is closed at its next command, unanswered.
		admin := dial(t, s.addr())
		admin.do("AUTH", "adminpw")
		admin.do("ACL", "SETUSER", "bob", "on", ">bobpw", "~*", "&*", "+@all")
		c := dial(t, s.addr())
		if v := c.do("AUTH", "bob", "bobpw"); v.IsError() {
			t.Fatal(v)
		}
		onChange := s.acl.users.OnChange
		s.acl.users.OnChange = nil
		s.acl.users.Delete([]string{"bob"})
		s.acl.users.OnChange = onChange
		c.send([]byte("SET"), []byte("k2"), []byte("by-bob"))
		c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if v, err := c.rd.ReadReply(); err == nil {
			t.Errorf("the deleted user's connection was answered %v", v)
		}
		if v := admin.do("EXISTS", "k2"); v.Int != 0 {
			t.Error("the deleted user's connection wrote k2")
		}
	})
}
