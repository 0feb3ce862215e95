package redact

import (
	"slices"
	"strings"
	"testing"
)

func words(s string) [][]byte {
	var out [][]byte
	for _, w := range strings.Fields(s) {
		if w == `""` {
			w = ""
		}
		out = append(out, []byte(w))
	}
	return out
}

func show(args [][]byte) string {
	s := make([]string, len(args))
	for i, a := range args {
		s[i] = string(a)
		if s[i] == "" {
			s[i] = `""`
		}
	}
	return strings.Join(s, " ")
}

// TestRules: each command's rule, on the forms Redis 7.0.15 redacts (recorded from
// redis-server: MONITOR and SLOWLOG GET show exactly these) and on the malformed ones Redis
// shows in clear and bloomd does not.
func TestRules(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		// As redis-server 7.0.15 shows them.
		{"auth", "auth upass", "auth (redacted)"},
		{"auth", "AUTH u upass", "AUTH (redacted) (redacted)"},
		{"hello", "hello 3 auth u upass", "hello 3 auth (redacted) (redacted)"},
		{"hello", "hello 3 setname x auth u upass", "hello 3 setname x auth (redacted) (redacted)"},
		{"hello", "hello 3 setname auth", "hello 3 setname auth"},
		{"hello", "hello 3", "hello 3"},
		{"acl|setuser", "acl setuser u on >upass +@all ~*", "acl setuser (redacted) (redacted) (redacted) (redacted) (redacted)"},
		{"config|set", "config set masterauth mapass", "config set masterauth (redacted)"},
		{"config|set", "config set masteruser muser requirepass x", "config set masteruser (redacted) requirepass (redacted)"},
		{"config|set", "config set REQUIREPASS x maxmemory 1mb", "config set REQUIREPASS (redacted) maxmemory 1mb"},
		{"config|set", "config set maxmemory 1mb", "config set maxmemory 1mb"},
		{"migrate", "migrate 127.0.0.1 1 k 0 10 auth mpass", "migrate 127.0.0.1 1 k 0 10 auth (redacted)"},
		{"migrate", "migrate 127.0.0.1 1 k 0 10 AUTH2 muser mpass", "migrate 127.0.0.1 1 k 0 10 AUTH2 (redacted) (redacted)"},
		{"migrate", `migrate 127.0.0.1 1 "" 0 10 copy replace auth2 muser mpass keys a b`, `migrate 127.0.0.1 1 "" 0 10 copy replace auth2 (redacted) (redacted) keys a b`},
		{"migrate", "migrate 127.0.0.1 1 k 0 10 auth", "migrate 127.0.0.1 1 k 0 10 auth"},
		{"migrate", `migrate 127.0.0.1 1 "" 0 10 keys auth x`, `migrate 127.0.0.1 1 "" 0 10 keys auth x`}, // keys, not options
		{"migrate", "migrate auth 1 auth 0 10", "migrate auth 1 auth 0 10"},                               // host and key named auth
		// Redis shows these in clear; bloomd does not.
		{"auth", "auth a b c", "auth (redacted) (redacted) (redacted)"},
		{"hello", "hello 4 auth u upass", "hello 4 auth (redacted) (redacted)"},
		{"hello", "hello 3 foo auth u upass", "hello 3 foo auth (redacted) (redacted)"},
		{"hello", "hello auth u upass", "hello auth (redacted) (redacted)"},
		{"hello", "hello 3 auth upass", "hello 3 auth (redacted)"},
		{"config|set", "config set requirepass x masterauth", "config set requirepass (redacted) masterauth"},
		{"migrate", "migrate h 1 k 0 10 bogus auth2 u p", "migrate h 1 k 0 10 bogus auth2 (redacted) (redacted)"},
		{"migrate", "migrate h 1 k 0 10 auth2 u", "migrate h 1 k 0 10 auth2 (redacted)"},
	} {
		in := words(tc.in)
		got := show(Args(For(tc.name), in))
		if got != tc.want {
			t.Errorf("%s: %q\n got %q\nwant %q", tc.name, tc.in, got, tc.want)
		}
		if show(in) != tc.in {
			t.Errorf("%s: Args changed its input: %q", tc.name, show(in))
		}
	}
	for _, name := range []string{"get", "bf.add", "config|get", "acl|getuser", "client|setname"} {
		if For(name) != nil {
			t.Errorf("%s has a rule", name)
		}
	}
	args := words("bf.add k x")
	if got := Args(For("bf.add"), args); &got[0] != &args[0] {
		t.Error("Args copied arguments of a command without a rule")
	}
}

func TestCommandLine(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"bloomd", "--requirepass", "s1", "--port", "6380"}, []string{"bloomd", "--requirepass", Redacted, "--port", "6380"}},
		{[]string{"bloomd", "/etc/bloomd.conf", "--requirepass=s1", "--masterauth", "s2", "--MASTERUSER", "u"},
			[]string{"bloomd", "/etc/bloomd.conf", "--requirepass=" + Redacted, "--masterauth", Redacted, "--MASTERUSER", Redacted}},
		{[]string{"bloomd", "--requirepass", "two", "words", "--bind", "127.0.0.1", "::1"},
			[]string{"bloomd", "--requirepass", Redacted, Redacted, "--bind", "127.0.0.1", "::1"}},
		{[]string{"bloomd", "--user", "alice on >s1 #0123 ~k:* +@read", "--user", "bob", "on", "<s2", "!ab", "nopass"},
			[]string{"bloomd", "--user", "alice on (redacted) (redacted) ~k:* +@read", "--user", "bob", "on", Redacted, Redacted, "nopass"}},
		{[]string{"bloomd", "--user=carol on >s3", "--port", "1"}, []string{"bloomd", "--user=carol on (redacted)", "--port", "1"}},
		{[]string{"bloomd"}, []string{"bloomd"}},
	} {
		in := slices.Clone(tc.in)
		if got := CommandLine(in); !slices.Equal(got, tc.want) {
			t.Errorf("CommandLine(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("CommandLine changed its input: %q", in)
		}
	}
}

func TestSecretRule(t *testing.T) {
	for rule, want := range map[string]bool{">p": true, "<p": true, "#h": true, "!h": true, "on": false, "~*": false, "": false, "+@all": false, "nopass": false} {
		if SecretRule(rule) != want {
			t.Errorf("SecretRule(%q) = %v", rule, !want)
		}
	}
	if got := UserRules("alice on >a b #c"); got != "alice on (redacted) b (redacted)" {
		t.Errorf("UserRules: %q", got)
	}
}

// FuzzArgs: no rule panics or indexes outside its arguments, whatever they are.
func FuzzArgs(f *testing.F) {
	f.Add("auth a b c")
	f.Add("hello 3 auth")
	f.Add("migrate h 1 k 0 10 auth2 u")
	f.Add("config set requirepass")
	f.Add("acl setuser")
	f.Fuzz(func(t *testing.T, line string) {
		args := words(line)
		for name := range rules {
			if len(args) == 0 {
				return
			}
			for _, i := range For(name)(args) {
				if i < 1 || i >= len(args) {
					t.Fatalf("%s: index %d of %d arguments", name, i, len(args))
				}
			}
			Args(For(name), args)
		}
	})
}
