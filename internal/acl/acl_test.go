package acl

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// match is a small glob matcher for the tests ('*' and '?' only); the server passes Redis's.
func match(p, s []byte) bool {
	if len(p) == 0 {
		return len(s) == 0
	}
	switch p[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if match(p[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return len(s) > 0 && match(p[1:], s[1:])
	}
	return len(s) > 0 && p[0] == s[0] && match(p[1:], s[1:])
}

// testTable is a table shaped like bloomd's: a few commands of each kind.
func testTable() *Table {
	type c struct {
		name string
		tr   Traits
	}
	cmds := []c{
		{"get", Traits{Readonly: true, Fast: true, FirstKey: 1, LastKey: 1, Step: 1}},
		{"set", Traits{Write: true, FirstKey: 1, LastKey: 1, Step: 1}},
		{"del", Traits{Write: true, FirstKey: 1, LastKey: -1, Step: 1}},
		{"exists", Traits{Readonly: true, Fast: true, FirstKey: 1, LastKey: -1, Step: 1}},
		{"rename", Traits{Write: true, FirstKey: 1, LastKey: 2, Step: 1}},
		{"keys", Traits{Readonly: true}},
		{"flushall", Traits{Write: true}},
		{"ping", Traits{Fast: true}},
		{"save", Traits{Admin: true}},
		{"bgsave", Traits{Admin: true}},
		{"shutdown", Traits{Admin: true}},
		{"auth", Traits{NoAuth: true, Fast: true}},
		{"select", Traits{Fast: true}},
		{"publish", Traits{Fast: true}},
		{"subscribe", Traits{}},
		{"psubscribe", Traits{}},
		{"config", Traits{}},
		{"config|get", Traits{Admin: true}},
		{"config|set", Traits{Admin: true}},
		{"config|help", Traits{}},
		{"client", Traits{}},
		{"client|id", Traits{}},
		{"client|kill", Traits{Admin: true}},
		{"bf.add", Traits{Write: true, FirstKey: 1, LastKey: 1, Step: 1}},
		{"bf.exists", Traits{Readonly: true, Fast: true, FirstKey: 1, LastKey: 1, Step: 1}},
		{"bf.mexists", Traits{Readonly: true, Fast: true, FirstKey: 1, LastKey: 1, Step: 1}},
		{"bf.reserve", Traits{Write: true, Fast: true, FirstKey: 1, LastKey: 1, Step: 1}},
		{"cf.add", Traits{Write: true, FirstKey: 1, LastKey: 1, Step: 1}},
	}
	specs := make([]Spec, len(cmds))
	for i, x := range cmds {
		specs[i] = DefaultSpec(x.name, x.tr)
	}
	return NewTable(specs, match)
}

func mustUser(t testing.TB, tb *Table, rules string) *User {
	t.Helper()
	u, err := tb.NewUser("u", strings.Fields(rules))
	if err != nil {
		t.Fatalf("rules %q: %v", rules, err)
	}
	return u
}

func TestDescribe(t *testing.T) {
	tb := testTable()
	if got := tb.NewDefaultUser().Describe(); got != "on nopass ~* &* +@all" {
		t.Errorf("default user: %q", got)
	}
	// Expected texts are what redis-server 7.0.15 prints in ACL LIST for the same rules.
	for _, c := range []struct{ rules, want string }{
		{"", "off resetchannels -@all"},
		{"reset", "off sanitize-payload resetchannels -@all"},
		{"on nopass allkeys allcommands", "on nopass ~* resetchannels +@all"},
		{"on >a >b <a ~x ~x %R~x %W~y &c &c", "on #3e23e8160039594a33894f6564e1b1348bbd7a0088d42c4acb73eeaed59c009d ~x %W~y resetchannels &c -@all"},
		{"+@all -@dangerous +config|get", "off resetchannels +@all -@dangerous +config|get"},
		{"+@all -get", "off resetchannels +@all -get"},
		{"-@all +select|0 +select|1", "off resetchannels -@all +select|0 +select|1"},
		{"nocommands +client", "off resetchannels -@all +client"},
		{"+@all -client|kill", "off resetchannels +@all -client|kill"},
		{"-@all +config", "off resetchannels -@all +config"},
		{"%R", "off %R~ resetchannels -@all"},
		{"%RW~*", "off ~* resetchannels -@all"},
		{"%R~x %W~x", "off ~x resetchannels -@all"},
		{"ON Off NOPASS", "off nopass resetchannels -@all"},
		{"nopass >p", "off #148de9c5a7a44d19e56cd9ae1a554bf67847afb0c58f6e12fa29ac7ddfca9940 resetchannels -@all"},
		{"on >p resetpass", "on resetchannels -@all"},
		{"&", "off resetchannels & -@all"},
		{"on sanitize-payload skip-sanitize-payload", "on skip-sanitize-payload resetchannels -@all"},
		{"+@all +get|foo", "off resetchannels +@all"},
		{"-@all +get|foo -get", "off resetchannels -@all"},
		{"-@all +@bloom", "off resetchannels -@all +@bloom"},
		{"-@all +bf.exists +bf.mexists ~urls:*", "off ~urls:* resetchannels -@all +bf.exists +bf.mexists"},
	} {
		if got := mustUser(t, tb, c.rules).Describe(); got != c.want {
			t.Errorf("%q:\n got %q\nwant %q", c.rules, got, c.want)
		}
	}
}

func TestRuleErrors(t *testing.T) {
	tb := testTable()
	for _, c := range []struct{ rules, want string }{
		{"allchannels &x", "Error in ACL SETUSER modifier '&x': Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"},
		{"~* ~x", "Error in ACL SETUSER modifier '~x': Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"},
		{"+config|get|x", "Error in ACL SETUSER modifier '+config|get|x': Allowing first-arg of a subcommand is not supported"},
		{"#abc", "Error in ACL SETUSER modifier '#abc': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{"!ab", "Error in ACL SETUSER modifier '!ab': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{"<nope", "Error in ACL SETUSER modifier '<nope': The password you are trying to remove from the user does not exist"},
		{"%X~a", "Error in ACL SETUSER modifier '%X~a': Syntax error"},
		{"%~x", "Error in ACL SETUSER modifier '%~x': Syntax error"},
		{"%RR~x", "Error in ACL SETUSER modifier '%RR~x': Syntax error"},
		{"+nosuch", "Error in ACL SETUSER modifier '+nosuch': Unknown command or category name in ACL"},
		{"+@nosuch", "Error in ACL SETUSER modifier '+@nosuch': Unknown command or category name in ACL"},
		{"-config|nosuch", "Error in ACL SETUSER modifier '-config|nosuch': Unknown command or category name in ACL"},
		{"+config|nosuch", "Error in ACL SETUSER modifier '+config|nosuch': Unknown command or category name in ACL"},
		{"+get|", "Error in ACL SETUSER modifier '+get|': Syntax error"},
		{"foo", "Error in ACL SETUSER modifier 'foo': Syntax error"},
		{"(+get", "Unmatched parenthesis in acl selector starting at '(+get'."},
		{"(~x +get)", "Error in ACL SETUSER modifier '(~x +get)': selectors (rules in parentheses) are not supported by bloomd"},
	} {
		_, err := tb.NewUser("u", strings.Fields(c.rules))
		if err == nil || err.Error() != c.want {
			t.Errorf("%q: got %v\nwant %s", c.rules, err, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	tb := testTable()
	a := func(s string) [][]byte {
		var out [][]byte
		for _, w := range strings.Fields(s) {
			out = append(out, []byte(w))
		}
		return out
	}
	for _, c := range []struct {
		rules, cmd, args string
		want             Result
		idx              int
	}{
		{"+@all ~* &*", "get", "get k", Allowed, 0},
		{"-@all ~*", "get", "get k", DeniedCommand, 0},
		{"-@all", "auth", "auth p", Allowed, 0}, // no-auth commands are always allowed
		{"+get ~a*", "get", "get abc", Allowed, 0},
		{"+get ~a*", "get", "get b", DeniedKey, 1},
		{"+del ~a*", "del", "del a1 a2 b3 a4", DeniedKey, 3},
		{"+get %W~a*", "get", "get a", DeniedKey, 1},
		{"+get %R~a*", "get", "get a", Allowed, 0},
		{"+set %R~a*", "set", "set a v", DeniedKey, 1},
		{"+set %W~a*", "set", "set a v", Allowed, 0},
		{"+set %W~a*", "set", "set a v get", DeniedKey, 1},  // SET ... GET reads the key too
		{"+exists %W~a*", "exists", "exists a", Allowed, 0}, // EXISTS does not touch the value
		{"+rename %R~a* %W~b*", "rename", "rename a b", DeniedKey, 1},
		{"+rename ~a* %W~b*", "rename", "rename a b", Allowed, 0},
		{"+bf.exists %R~urls:*", "bf.exists", "bf.exists urls:1 x", Allowed, 0},
		{"+bf.add %R~urls:*", "bf.add", "bf.add urls:1 x", DeniedKey, 1},
		{"+@bloom ~*", "cf.add", "cf.add k x", DeniedCommand, 0},
		{"+@bloom ~*", "bf.add", "bf.add k x", Allowed, 0},
		{"+@cuckoo ~*", "cf.add", "cf.add k x", Allowed, 0},
		{"+@all -@dangerous +config|get", "config|get", "config get maxmemory", Allowed, 0},
		{"+@all -@dangerous +config|get", "config|set", "config set a b", DeniedCommand, 0},
		{"+@all -@dangerous", "config|help", "config help", Allowed, 0},
		{"-@all +select|0", "select", "select 0", Allowed, 0},
		{"-@all +select|0", "select", "select 1", DeniedCommand, 0},
		{"+publish &news.*", "publish", "publish news.a m", Allowed, 0},
		{"+publish &news.*", "publish", "publish other m", DeniedChannel, 1},
		{"+subscribe &a &b", "subscribe", "subscribe a b c", DeniedChannel, 3},
		{"+psubscribe &news.*", "psubscribe", "psubscribe news.*", Allowed, 0},
		{"+psubscribe &news.*", "psubscribe", "psubscribe news.a", DeniedChannel, 1},
		{"+publish allchannels", "publish", "publish x m", Allowed, 0},
	} {
		u := mustUser(t, tb, c.rules)
		r, i := u.Check(tb.Lookup(c.cmd), a(c.args))
		if r != c.want || i != c.idx {
			t.Errorf("%q %q: got %v at %d, want %v at %d", c.rules, c.args, r, i, c.want, c.idx)
		}
	}
}

func TestPasswords(t *testing.T) {
	tb := testTable()
	u := mustUser(t, tb, "on >secret >other")
	if !u.CheckPassword([]byte("secret")) || !u.CheckPassword([]byte("other")) || u.CheckPassword([]byte("nope")) {
		t.Error("password check wrong")
	}
	off, _ := u.SetUser([]string{"off"})
	if off.CheckPassword([]byte("secret")) {
		t.Error("a user that is off authenticated")
	}
	h := HashPassword([]byte("secret"))
	v := mustUser(t, tb, "on #"+h)
	if !v.CheckPassword([]byte("secret")) {
		t.Error("#hash rule")
	}
	w, err := v.SetUser([]string{"!" + h})
	if err != nil || w.CheckPassword([]byte("secret")) || len(w.PasswordHashes()) != 0 {
		t.Errorf("!hash rule: %v", err)
	}
	if !mustUser(t, tb, "on nopass").CheckPassword([]byte("anything")) {
		t.Error("nopass")
	}
}

func TestUsersRegistry(t *testing.T) {
	tb := testTable()
	us := NewUsers(tb)
	var closed []string
	us.OnChange = func(as []*Account) {
		for _, a := range as {
			closed = append(closed, a.Name())
		}
	}
	if err := us.SetUser("alice", []string{"on", ">pw", "+get", "~a*"}); err != nil {
		t.Fatal(err)
	}
	a := us.Authenticate("alice", []byte("pw"))
	if a == nil || us.Authenticate("alice", []byte("no")) != nil || us.Authenticate("bob", nil) != nil {
		t.Fatal("Authenticate")
	}
	// A refused rule changes nothing.
	if err := us.SetUser("alice", []string{"+set", "+nosuch"}); err == nil {
		t.Fatal("bad rule accepted")
	}
	if r, _ := a.User().Check(tb.Lookup("set"), [][]byte{[]byte("set"), []byte("a"), []byte("v")}); r != DeniedCommand {
		t.Error("partial rules applied")
	}
	us.SetUser("alice", []string{"+set"})
	if r, _ := a.User().Check(tb.Lookup("set"), [][]byte{[]byte("set"), []byte("a"), []byte("v")}); r != Allowed {
		t.Error("change not seen through the account")
	}
	us.SetUser("alice", []string{"off"})
	if len(closed) != 0 || us.Authenticate("alice", []byte("pw")) != nil {
		t.Errorf("off: closed %v", closed) // Redis 7.0 keeps the connections of a user turned off
	}
	if _, err := us.Delete([]string{"default"}); err != ErrDeleteDefault {
		t.Error(err)
	}
	if n, _ := us.Delete([]string{"alice", "nobody"}); n != 1 || !a.Removed() || len(closed) != 1 {
		t.Error("Delete")
	}
	if got := us.Names(); len(got) != 1 || got[0] != "default" {
		t.Error(got)
	}
	if us.SetUser("a b", nil) != ErrUsernameSpaces {
		t.Error("space in name")
	}
	us.SetDefaultPassword("pw")
	if us.Authenticate("default", []byte("x")) != nil || us.Authenticate("default", []byte("pw")) == nil {
		t.Error("requirepass")
	}
}

func TestSaveLoad(t *testing.T) {
	tb := testTable()
	us := NewUsers(tb)
	us.SetUser("alice", []string{"on", ">pw", "+@all", "-@dangerous", "+config|get", "%R~a*", "&ch"})
	us.SetUser("bob", []string{"+select|0", "~*"})
	path := filepath.Join(t.TempDir(), "users.acl")
	if err := us.Save(path); err != nil {
		t.Fatal(err)
	}
	want := us.List()
	vs := NewUsers(tb)
	if err := vs.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	if got := vs.List(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("round trip:\n%v\n%v", got, want)
	}
	// A malformed file changes nothing and says why, in Redis's words.
	os.WriteFile(path, []byte("user carol on +nosuch\n# comment\nuser dave on %X~k\nuser carol\n"), 0o600)
	err := vs.LoadFile(path)
	wantErr := path + ":1: Error in applying operation '+nosuch': Unknown command or category name in ACL. " +
		path + ":2 should start with user keyword followed by the username. " +
		path + ":3: Syntax error. WARNING: Duplicate user 'carol' found on line 4. " +
		"WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
	if err == nil || err.Error() != wantErr {
		t.Errorf("got  %v\nwant %s", err, wantErr)
	}
	if got := vs.List(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Error("a refused file changed the users")
	}
	err = vs.LoadFile(filepath.Join(t.TempDir(), "missing"))
	if err == nil || !strings.Contains(err.Error(), "Error loading ACLs, opening file '") || !strings.HasSuffix(err.Error(), ": No such file or directory") {
		t.Error(err)
	}
}

func TestLogGrouping(t *testing.T) {
	l := NewLog(3)
	t0 := time.Unix(1000, 0)
	l.Add(DeniedCommand, ContextToplevel, "get", "u", "c1", t0)
	l.Add(DeniedKey, ContextToplevel, "k", "u", "c1", t0)
	l.Add(DeniedCommand, ContextToplevel, "get", "u", "c2", t0.Add(30*time.Second))
	e := l.Entries(10)
	if len(e) != 2 || e[0].Count != 2 || e[0].Object != "get" || e[0].ClientInfo != "c2" {
		t.Fatalf("%+v", e)
	}
	l.Add(DeniedCommand, ContextToplevel, "get", "u", "c3", t0.Add(100*time.Second))
	if e := l.Entries(10); len(e) != 3 || e[0].Count != 1 {
		t.Fatalf("an entry older than a minute was reused: %+v", e)
	}
	l.Add(DeniedAuth, ContextMulti, "AUTH", "x", "c", t0)
	if e := l.Entries(10); len(e) != 3 || e[0].ReasonName() != "auth" {
		t.Fatalf("max length: %+v", e)
	}
	l.Reset()
	if len(l.Entries(10)) != 0 {
		t.Fatal("reset")
	}
}

func TestCheckAllocs(t *testing.T) {
	tb := testTable()
	def := tb.NewDefaultUser()
	u := mustUser(t, tb, "on +@all ~a:* %R~b:* %W~c:*")
	cmd := tb.Lookup("bf.add")
	args := [][]byte{[]byte("bf.add"), []byte("c:1"), []byte("x")}
	n := testing.AllocsPerRun(100, func() {
		def.Check(cmd, args)
		u.Check(cmd, args)
	})
	if n != 0 {
		t.Errorf("Check allocates %v times", n)
	}
}

func BenchmarkCheck(b *testing.B) {
	tb := testTable()
	cmd := tb.Lookup("bf.add")
	args := [][]byte{[]byte("bf.add"), []byte("c:12345"), []byte("item")}
	for _, c := range []struct{ name, rules string }{
		{"user=default", ""},
		{"user=3-key-patterns", "on +@all ~a:* %R~b:* %W~c:*"},
	} {
		u := tb.NewDefaultUser()
		if c.rules != "" {
			u = mustUser(b, tb, c.rules)
		}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if r, _ := u.Check(cmd, args); r != Allowed {
					b.Fatal(r)
				}
			}
		})
	}
}

func FuzzSetUser(f *testing.F) {
	for _, s := range []string{"on >p ~a* +get", "+@all -@dangerous +config|get", "%RW~x &y (~z +get)", "-@all +select|0 reset", "%R~ !ab <x #" + strings.Repeat("a", 64)} {
		f.Add(s)
	}
	tb := testTable()
	f.Fuzz(func(t *testing.T, s string) {
		u, err := tb.NewUser("u", strings.Split(s, " "))
		if err != nil {
			return
		}
		// What ACL LIST prints must load back to the same user.
		d := u.Describe()
		v, err := tb.NewUser("u", strings.Split(d, " "))
		if err != nil {
			t.Fatalf("%q rendered as %q, which does not parse: %v", s, d, err)
		}
		if v.Describe() != d {
			t.Fatalf("%q: %q reloads as %q", s, d, v.Describe())
		}
	})
}

func FuzzParseFile(f *testing.F) {
	f.Add([]byte("user default on nopass ~* &* +@all\nuser a on #" + strings.Repeat("0", 64) + " ~k* -@all +get\n"))
	f.Add([]byte("user\n\nuser b (~x\n"))
	tb := testTable()
	f.Fuzz(func(t *testing.T, data []byte) {
		users, err := tb.ParseFile(data, "f")
		if err != nil {
			if !strings.HasSuffix(err.Error(), "no change to the previously active ACL rules was performed") {
				t.Fatalf("error without Redis's ending: %v", err)
			}
			return
		}
		if users["default"] == nil {
			t.Fatal("no default user")
		}
	})
}

// TestRedact: an error quoting a password or hash rule hides it; the others, and ACL SETUSER's
// own text, are Redis's.
func TestRedact(t *testing.T) {
	tab := testTable()
	for _, tc := range []struct {
		rules []string
		want  string
	}{
		{[]string{"on", ">pw", "<secret"}, "Error in ACL SETUSER modifier '(redacted)': The password you are trying to remove from the user does not exist"},
		{[]string{"#secret"}, "Error in ACL SETUSER modifier '(redacted)': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{[]string{"!secret"}, "Error in ACL SETUSER modifier '(redacted)': The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"},
		{[]string{"(>secret", "~x"}, "Unmatched parenthesis in acl selector starting at '(redacted)'."},
		{[]string{"bogus"}, "Error in ACL SETUSER modifier 'bogus': Syntax error"},
	} {
		_, err := tab.NewUser("u", tc.rules)
		if err == nil {
			t.Fatalf("%q accepted", tc.rules)
		}
		red := Redact(err)
		if red.Error() != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", err, red, tc.want)
		}
		if !errors.Is(red, err) {
			t.Errorf("Redact(%q) does not wrap it", err)
		}
		if strings.Contains(tc.want, "(redacted)") && !strings.Contains(err.Error(), "secret") {
			t.Errorf("the error itself (ACL SETUSER's reply, Redis's text) changed: %q", err)
		}
	}
	if Redact(nil) != nil {
		t.Error("Redact(nil) != nil")
	}
}

// TestRemovedAccountAllowsNothing: an account deleted, or dropped by a reload, keeps no
// permission for a connection that still holds it.
func TestRemovedAccountAllowsNothing(t *testing.T) {
	tab := testTable()
	us := NewUsers(tab)
	if err := us.SetUser("bob", []string{"on", ">pw", "~*", "&*", "+@all"}); err != nil {
		t.Fatal(err)
	}
	if err := us.SetUser("carol", []string{"on", ">pw", "~*", "&*", "+@all"}); err != nil {
		t.Fatal(err)
	}
	bob, carol := us.Get("bob"), us.Get("carol")
	get := tab.Lookup("get")
	if r, _ := bob.User().Check(get, [][]byte{[]byte("get"), []byte("k")}); r != Allowed {
		t.Fatalf("bob before: %v", r)
	}
	us.Delete([]string{"bob"})
	us.Replace(map[string]*User{"default": tab.NewDefaultUser()})
	for _, a := range []*Account{bob, carol} {
		if !a.Removed() {
			t.Errorf("%s not removed", a.Name())
		}
		if r, _ := a.User().Check(get, [][]byte{[]byte("get"), []byte("k")}); r != DeniedCommand {
			t.Errorf("%s after removal: %v", a.Name(), r)
		}
		if a.User().CheckPassword([]byte("pw")) {
			t.Errorf("%s's password still works after removal", a.Name())
		}
	}
}
