package aclcompat

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// bloomCategories are the ACL categories of RedisBloom's commands as Redis 8 gives them: the
// categories RedisBloom registers for each command (src/rebloom.c: "bloom" or "cuckoo", "read"
// or "write", and "fast" for BF.RESERVE and CF.RESERVE), plus @fast for the commands it flags
// "fast" and @slow for the rest, the rule Redis applies to its own commands (bloomd's commands
// are its own). redis.io's command pages agree on @bloom/@cuckoo and on @read/@write, except that
// they list BF.SCANDUMP as @write, which RedisBloom registers "readonly" and "read"; and they list
// CF.DEL as @slow, which RedisBloom flags "fast". valkey-bloom puts its BF.* commands in @bloom
// with the same @read/@write split.
var bloomCategories = map[string]string{
	"bf.reserve":   "@write @fast @bloom",
	"bf.add":       "@write @slow @bloom",
	"bf.madd":      "@write @slow @bloom",
	"bf.insert":    "@write @slow @bloom",
	"bf.exists":    "@read @fast @bloom",
	"bf.mexists":   "@read @fast @bloom",
	"bf.info":      "@read @fast @bloom",
	"bf.card":      "@read @fast @bloom",
	"bf.debug":     "@read @fast @bloom",
	"bf.scandump":  "@read @fast @bloom",
	"bf.loadchunk": "@write @slow @bloom",

	"cf.reserve":   "@write @fast @cuckoo",
	"cf.add":       "@write @slow @cuckoo",
	"cf.addnx":     "@write @slow @cuckoo",
	"cf.insert":    "@write @slow @cuckoo",
	"cf.insertnx":  "@write @slow @cuckoo",
	"cf.exists":    "@read @fast @cuckoo",
	"cf.mexists":   "@read @fast @cuckoo",
	"cf.count":     "@read @fast @cuckoo",
	"cf.del":       "@write @fast @cuckoo",
	"cf.compact":   "@read @fast @cuckoo",
	"cf.scandump":  "@read @fast @cuckoo",
	"cf.loadchunk": "@write @slow @cuckoo",
	"cf.info":      "@read @fast @cuckoo",
	"cf.debug":     "@read @fast @cuckoo",
}

func sortedFields(s string) []string {
	f := strings.Fields(s)
	sort.Strings(f)
	return f
}

// TestBloomCategories checks the categories COMMAND INFO gives each BF.* and CF.* command
// against bloomCategories, and that ACL CAT lists the same commands in each category, so that
// +@read, -@write, +@bloom and -@cuckoo select the commands an operator expects.
func TestBloomCategories(t *testing.T) {
	c := dial(t, "bloomd", startBloomd(t, nil))
	byCat := map[string][]string{}
	for name, want := range bloomCategories {
		v := c.must("COMMAND", "INFO", name)
		if len(v.Elems) != 1 || len(v.Elems[0].Elems) < 7 {
			t.Errorf("COMMAND INFO %s: %s", name, v)
			continue
		}
		var got []string
		for _, e := range v.Elems[0].Elems[6].Elems {
			got = append(got, e.Text())
		}
		sort.Strings(got)
		if !slices.Equal(got, sortedFields(want)) {
			t.Errorf("%s: categories %v, want %v", name, got, sortedFields(want))
		}
		for _, cat := range strings.Fields(want) {
			byCat[strings.TrimPrefix(cat, "@")] = append(byCat[strings.TrimPrefix(cat, "@")], name)
		}
	}
	for cat, want := range byCat {
		v := c.must("ACL", "CAT", cat)
		var got []string
		for _, e := range v.Elems {
			if n := strings.ToLower(e.Text()); strings.HasPrefix(n, "bf.") || strings.HasPrefix(n, "cf.") {
				got = append(got, n)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("ACL CAT %s lists %v, want %v", cat, got, want)
		}
	}
	// No filter command is in a category an operator takes away for safety.
	for _, cat := range []string{"dangerous", "admin", "keyspace", "string"} {
		for _, e := range c.must("ACL", "CAT", cat).Elems {
			if n := strings.ToLower(e.Text()); strings.HasPrefix(n, "bf.") || strings.HasPrefix(n, "cf.") {
				t.Errorf("ACL CAT %s lists %s", cat, n)
			}
		}
	}
}

// bloomKeyCells are BF.* and CF.* commands with valid arguments; "{k}" stands for the key.
var bloomKeyCells = [][]string{
	{"BF.RESERVE", "{k}", "0.01", "100"},
	{"BF.ADD", "{k}", "a"},
	{"BF.MADD", "{k}", "a", "b"},
	{"BF.INSERT", "{k}", "ITEMS", "a"},
	{"BF.EXISTS", "{k}", "a"},
	{"BF.MEXISTS", "{k}", "a", "b"},
	{"BF.INFO", "{k}"},
	{"BF.CARD", "{k}"},
	{"BF.SCANDUMP", "{k}", "0"},
	{"CF.RESERVE", "{k}", "100"},
	{"CF.ADD", "{k}", "a"},
	{"CF.ADDNX", "{k}", "a"},
	{"CF.INSERT", "{k}", "ITEMS", "a"},
	{"CF.EXISTS", "{k}", "a"},
	{"CF.MEXISTS", "{k}", "a"},
	{"CF.COUNT", "{k}", "a"},
	{"CF.DEL", "{k}", "a"},
	{"CF.INFO", "{k}"},
}

// TestBloomKeyPermissions compares, when REDISBLOOM_SO names RedisBloom's module file, which
// BF.* and CF.* commands Redis 7.0 with the module and bloomd allow on which keys, for users
// with +@all and key patterns. RedisBloom 2.6 gives its commands no categories of its own and
// only read-write key specs in Redis 7.0, so users limited by category or by %R/%W are not
// compared.
func TestBloomKeyPermissions(t *testing.T) {
	so := os.Getenv("REDISBLOOM_SO")
	if so == "" {
		t.Skip("REDISBLOOM_SO does not name RedisBloom's module file; skipping the comparison with RedisBloom in Redis 7.0")
	}
	if _, err := os.Stat(so); err != nil {
		t.Fatalf("REDISBLOOM_SO: %v", err)
	}
	redisAddr := startRedis(t, "--loadmodule", so)
	bloomdAddr := startBloomd(t, nil)
	admin := dialPair(t, redisAddr, bloomdAddr)
	users := []gridUser{
		{name: "filters", pass: "pw", rules: "on >pw +@all ~bf:* ~cf:*"},
		{name: "nofilters", pass: "pw", rules: "on >pw +@all ~other:*"},
		{name: "noadd", pass: "pw", rules: "on >pw +@all ~* -bf.add -cf.add"},
		{name: "onlyexists", pass: "pw", rules: "on >pw -@all +bf.exists +cf.exists ~bf:* ~cf:*"},
	}
	for _, u := range users {
		admin.must(append([]string{"ACL", "SETUSER", u.name}, strings.Fields(u.rules)...)...)
	}
	admin.must("ACL", "LOG", "RESET")
	checked, denied := 0, 0
	for _, u := range users {
		p := login(t, redisAddr, bloomdAddr, u)
		for _, k := range []string{"bf:1", "cf:1", "other:1"} {
			for _, cmd := range bloomKeyCells {
				cmd = expand(cmd, k)
				rv, rerr := p.redis.send(cmd...)
				bv, berr := p.bloomd.send(cmd...)
				r, b := decision(rv, rerr), decision(bv, berr)
				if r != b {
					t.Errorf("%s: %q: redis+RedisBloom %s, bloomd %s", u.name, cmd, r, b)
				}
				checked++
				if r != "allowed" {
					denied++
				}
				args := append([]string{"ACL", "DRYRUN", u.name}, cmd...)
				if r, b := admin.redis.do(args...), admin.bloomd.do(args...); r.String() != b.String() {
					t.Errorf("%q: redis+RedisBloom %s, bloomd %s", args, r, b)
				}
			}
		}
		compareLogs(t, admin, "the filter commands of "+u.name)
	}
	if denied == 0 || denied == checked {
		t.Errorf("%d of %d cells denied: the comparison does not test both outcomes", denied, checked)
	}
	t.Logf("%d filter command cells, %d denied by Redis+RedisBloom and bloomd alike", checked, denied)
}
