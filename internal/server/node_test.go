package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bloomd/bloom/internal/skipped"
)

// requireNodeEnv makes TestNodeRedis fail, rather than skip, when node or npm is missing.
const requireNodeEnv = "BLOOM_REQUIRE_NODE"

// nodeAndNPM returns the paths of node and npm, or skips t when either is missing and
// BLOOM_REQUIRE_NODE is not 1.
func nodeAndNPM(t *testing.T) (node, npm string) {
	t.Helper()
	node, errNode := exec.LookPath("node")
	npm, errNPM := exec.LookPath("npm")
	if errNode == nil && errNPM == nil {
		return node, npm
	}
	if os.Getenv(requireNodeEnv) == "1" {
		t.Fatalf("node or npm is not installed, and %s=1 requires them (apt-get install nodejs npm)", requireNodeEnv)
	}
	skipped.Missing(t, "node", "node or npm is not installed (apt-get install nodejs npm); skipping")
	return "", ""
}

// npmCI installs the exact packages of dir's package-lock.json into dir/node_modules: from npm's
// local cache when it holds them all, else from the registry. When neither works it fails t if
// BLOOM_REQUIRE_NODE is 1 and skips t otherwise.
func npmCI(t *testing.T, npm, dir string) {
	t.Helper()
	var out []byte
	for _, args := range [][]string{
		{"ci", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"},
		{"ci", "--ignore-scripts", "--no-audit", "--no-fund"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_loglevel=error")
		var err error
		out, err = cmd.CombinedOutput()
		cancel()
		if err == nil {
			return
		}
	}
	if os.Getenv(requireNodeEnv) == "1" {
		t.Fatalf("npm ci in %s: %s", dir, out)
	}
	// Without the registry and with an empty cache there is nothing to run the client with.
	skipped.Missing(t, "node-redis", "npm ci could not install node-redis (no registry and not in npm's cache); skipping:\n"+string(out))
}

// TestNodeRedis runs testdata/node/client.mjs, which uses node-redis's cf and bf commands
// (@redis/bloom, at the versions package-lock.json pins) in RESP2 and RESP3, with and without a
// password. The packages install into a temporary copy of testdata/node, never into the tree.
func TestNodeRedis(t *testing.T) {
	node, npm := nodeAndNPM(t)
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json", "client.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "node", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	npmCI(t, npm, dir)
	for _, pass := range []string{"", "pw"} {
		s := startServer(t, func(c *Config) { c.Requirepass = pass })
		_, port, _ := strings.Cut(s.addr(), ":")
		args := []string{filepath.Join(dir, "client.mjs"), port}
		if pass != "" {
			args = append(args, pass)
		}
		if out := run(t, nil, node, args...); out != "ok\n" {
			t.Fatalf("client.mjs: %q", out)
		}
	}
}
