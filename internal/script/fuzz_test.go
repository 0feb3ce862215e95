package script

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzShebang checks the shebang parser on any body: it never panics, a body without "#!"
// is Redis 6 compatible, and a parsed shebang ends at the first newline.
func FuzzShebang(f *testing.F) {
	for _, s := range []string{"return 1", "#!lua\nreturn 1", "#!lua flags=no-writes,allow-oom\n", "#!lua \"a\\x41\" 'b\\'c'\n",
		"#!lua flags=\n", "#!", "#!lua", "#!lua\x00\n", "#!lua \"unbalanced\n", "#!lua flags=a,,b\n", "#!lua \"x\"y\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		flags, n, err := ParseShebang(body)
		if !bytes.HasPrefix(body, []byte("#!")) {
			if flags != FlagCompat || n != 0 || err != nil {
				t.Fatalf("no shebang: %v %d %v", flags, n, err)
			}
			return
		}
		if err == nil && (n >= len(body) || body[n] != '\n' || bytes.IndexByte(body[:n], '\n') >= 0) {
			t.Fatalf("shebang of %d bytes in %q", n, body)
		}
		if err == nil && flags&FlagCompat != 0 {
			t.Fatalf("a shebang script in compatibility mode: %q", body)
		}
	})
}

// FuzzLibraries feeds cjson.decode, cmsgpack.unpack and struct.unpack any input from a
// script: they return values or raise a Lua error, never panic, and what cjson decodes
// encodes again.
func FuzzLibraries(f *testing.F) {
	for _, s := range []string{`[1,2,{"a":null}]`, `{"x":"\u00e9\ud83d\ude00"}`, `[1,2`, `-inf`, `0x10`, "\x93\x01\x02\x03", "\xdc\xff\xff",
		"\x81\xa1a\x01", "\xcb\x3f\xf8\x00\x00\x00\x00\x00\x00", `"\q"`, strings.Repeat("[", 2000)} {
		f.Add([]byte(s), "<i4")
	}
	e := New(Options{})
	scripts := map[string]*Script{}
	for _, body := range []string{
		"local ok, v = pcall(cjson.decode, ARGV[1]) if ok then return cjson.encode(v) end return 'error'",
		"local ok, a, b = pcall(cmsgpack.unpack, ARGV[1]) return tostring(ok)",
		"local ok, a = pcall(struct.unpack, ARGV[2], ARGV[1]) return tostring(ok)",
		"local ok, a = pcall(struct.pack, ARGV[2], 1, 2, 'x') return tostring(ok)",
	} {
		s, err := e.Load([]byte(body))
		if err != nil {
			f.Fatal(err)
		}
		scripts[body] = s
	}
	f.Fuzz(func(t *testing.T, data []byte, format string) {
		for body, s := range scripts {
			_, msg := e.Run(&Request{Script: s, Args: [][]byte{data, []byte(format)}, Proto: 2, Host: &echoHost{}})
			if msg != "" && !strings.Contains(body, "cjson") {
				t.Fatalf("%s on %q: %s", body, data, msg)
			}
		}
	})
}
