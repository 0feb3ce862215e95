//go:build unix

package server

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestConfigRewriteFile: CONFIG REWRITE writes through a temporary file of its own (a file or
// link planted at a predictable name in the directory is neither followed nor clobbered),
// keeps the config file's mode (0600 stays 0600, where Redis makes it 0644) and, where the
// process may, its owner; a config file that is a symbolic link stays one and its target is
// rewritten; no temporary file is left behind.
func TestConfigRewriteFile(t *testing.T) {
	dir := t.TempDir()
	// rewrite runs CONFIG REWRITE of the file at path by a server (of its own, which learns
	// path before any client connects) with maxmemory changed.
	rewrite := func(path string) {
		t.Helper()
		s := startServer(t, func(c *Config) { c.Dir = dir })
		s.configFile = path
		c := dial(t, s.addr())
		c.do("CONFIG", "SET", "maxmemory", "100mb")
		if v := c.do("CONFIG", "REWRITE"); v.Text() != "OK" {
			t.Fatalf("CONFIG REWRITE of %s: %v", path, v)
		}
	}

	conf := filepath.Join(dir, "bloomd.conf")
	if err := os.WriteFile(conf, []byte("port 6379\nrequirepass \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(conf, 0o600) // whatever the umask
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("untouched\n"), 0o644)
	// The name the rewrite used to write through, and a few like it.
	for _, name := range []string{".bloomd.conf.tmp", "bloomd.conf.tmp", ".bloomd.conf.tmp-0"} {
		if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	owner := -1
	if os.Geteuid() == 0 {
		owner = 65534 // root may give the file away: the rewrite must keep that owner
		if err := os.Chown(conf, owner, owner); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(conf)
	fi, err := os.Lstat(conf)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o600 {
		t.Errorf("the rewritten file's mode is %v, want -rw------- as before", fi.Mode())
	}
	if st := fi.Sys().(*syscall.Stat_t); owner >= 0 && (int(st.Uid) != owner || int(st.Gid) != owner) {
		t.Errorf("the rewritten file's owner is %d:%d, want %d:%d as before", st.Uid, st.Gid, owner, owner)
	}
	if got, _ := os.ReadFile(conf); !strings.Contains(string(got), "maxmemory 104857600") {
		t.Errorf("the file was not rewritten:\n%s", got)
	}
	if got, _ := os.ReadFile(victim); string(got) != "untouched\n" {
		t.Errorf("a link planted in the directory was written through: the victim holds\n%s", got)
	}

	// A config file that is a link: the link stays, its target is rewritten, with its mode.
	real := filepath.Join(t.TempDir(), "real.conf")
	os.WriteFile(real, []byte("port 6379\n"), 0o640)
	os.Chmod(real, 0o640)
	link := filepath.Join(dir, "linked.conf")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	rewrite(link)
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the linked config file is no longer a link: %v %v", fi.Mode(), err)
	}
	if fi, _ := os.Stat(real); fi.Mode() != 0o640 {
		t.Errorf("the link's target has mode %v, want -rw-r-----", fi.Mode())
	}
	if got, _ := os.ReadFile(real); !strings.Contains(string(got), "maxmemory 104857600") {
		t.Errorf("the link's target was not rewritten:\n%s", got)
	}

	for _, d := range []string{dir, filepath.Dir(real)} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp") && e.Type()&os.ModeSymlink == 0 {
				t.Errorf("a temporary file was left behind: %s", filepath.Join(d, e.Name()))
			}
		}
	}
}
