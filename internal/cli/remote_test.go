package cli

import (
	"strings"
	"testing"
)

func TestParseRedisURL(t *testing.T) {
	for _, c := range []struct {
		in   string
		want redisTarget
	}{
		{"redis://localhost:6379/users", redisTarget{addr: "localhost:6379", host: "localhost", key: "users"}},
		{"redis://127.0.0.1/users", redisTarget{addr: "127.0.0.1:6379", host: "127.0.0.1", key: "users"}},
		{"rediss://[::1]:6380/a/b", redisTarget{addr: "[::1]:6380", host: "::1", key: "a/b", tls: true}},
		{"redis://:s3cret@h:1/k", redisTarget{addr: "h:1", host: "h", key: "k", password: "s3cret", hasPass: true}},
		{"redis://ann:pw@h/k?db=3", redisTarget{addr: "h:6379", host: "h", key: "k", user: "ann", password: "pw", hasPass: true, db: 3}},
		{"redis://h/my%20key%2Fx%23y", redisTarget{addr: "h:6379", host: "h", key: "my key/x#y"}},
		{"redis://ann@h/k", redisTarget{addr: "h:6379", host: "h", key: "k", user: "ann"}},
	} {
		got, err := parseRedisURL(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		got.display = ""
		if got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.in, got, c.want)
		}
	}
	for in, want := range map[string]string{
		"localhost:6379/users":      "no redis:// or rediss:// scheme",
		"http://h/k":                `scheme "http"`,
		"redis:h/k":                 "no redis://",
		"redis:///k":                "no host",
		"redis://h:0/k":             "port",
		"redis://h:99999/k":         "port",
		"redis://h:x/k":             "",
		"redis://h:/k":              "empty port",
		"redis://h":                 "no key",
		"redis://h/":                "no key",
		"redis://h/k?db=x":          "database number",
		"redis://h/k?timeout=1":     "unknown parameter",
		"redis://h/k#frag":          "fragment",
		"redis://h/%zz":             "",
		"redis://:pw@h:x/k":         "",
		"redis://user:hunter2@h:x/": "",
	} {
		_, err := parseRedisURL(in)
		if err == nil {
			t.Errorf("%s: accepted", in)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "redis://localhost:6379/users") {
			t.Errorf("%s: error %q should say %q and show an example", in, err, want)
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: error shows the password: %q", in, err)
		}
	}
}

// The URL parser takes what users type: it never panics, and what it accepts names a host,
// a port and a key.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"redis://u:pw@h/k":   "redis://u:xxxxx@h/k",
		"redis://:p@w@h:1/k": "redis://:xxxxx@h:1/k",
		"redis://u@h/k":      "redis://u@h/k",
		"redis://h/k:v@x":    "redis://h/k:v@x",
		"rediss://:pw@h:x/":  "rediss://:xxxxx@h:x/",
		"no scheme:pw@h":     "no scheme:pw@h",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzParseRedisURL(f *testing.F) {
	for _, s := range []string{
		"redis://localhost:6379/users", "rediss://:pw@[::1]:6380/a%2Fb?db=2", "redis://h/k#x",
		"redis://u:p@h:1/k", "redis:///", "redis://h:99999/k", "redis://[::1/k", "", "redis://h/%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseRedisURL(s)
		if err != nil {
			return
		}
		if got.host == "" || got.key == "" || !strings.Contains(got.addr, ":") {
			t.Fatalf("%q accepted as %+v", s, got)
		}
		if got.hasPass && !strings.Contains(got.display, ":xxxxx@") {
			t.Fatalf("%q: display %q does not hide the password", s, got.display)
		}
	})
}
