package cli

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/bloomd/bloom/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// checkModuleKeys runs bloom test and bloom info on filters of RedisBloom's BF.* and CF.*
// commands kept by the server at addr: a dump pushed with bloom push (the README's quick
// start, push then test), a non-scaling filter and a cuckoo filter made with the commands, and
// refusals. do runs a command on the server.
func checkModuleKeys(t *testing.T, addr string, do func(args ...any) error) {
	t.Helper()
	dump := tempPath(t, "phones.rb")
	run(t, numbers(1, 2000), "build", "--format", "redisbloom", "-n", "2000", "-p", "0.001", "-o", dump).ok(t)
	url := "redis://" + addr + "/phones"
	run(t, "", "push", dump, url).ok(t)

	// Right after the push, test answers from the server: every pushed item, and an absent one.
	if got := run(t, "", "test", url, "42", "1999", "no such item").stdout; got != "maybe\nmaybe\nno\n" {
		t.Errorf("test %s: %q", url, got)
	}
	if got := run(t, numbers(1, 2000), "test", url).ok(t); got != strings.Repeat("maybe\n", 2000) {
		t.Errorf("test %s with the items on stdin misses some", url)
	}
	if r := run(t, "", "test", url, "absent", "nor this"); r.code != exitNone || r.stdout != "no\nno\n" {
		t.Errorf("test of absent items: status %d, %q", r.code, r.stdout)
	}
	info := run(t, "", "info", url).ok(t)
	for _, want := range []string{"key:", url, "TYPE MBbloom--", "Capacity:", "2,000", "Number of filters:", "Number of items inserted:", "Expansion rate:"} {
		if !strings.Contains(info, want) {
			t.Errorf("info %s lacks %q:\n%s", url, want, info)
		}
	}
	var js struct {
		URL, Type string
		Info      map[string]*int64
	}
	if err := json.Unmarshal([]byte(run(t, "", "info", "--json", url).ok(t)), &js); err != nil || js.Type != "MBbloom--" || js.Info["Capacity"] == nil || *js.Info["Capacity"] != 2000 {
		t.Errorf("info --json: %+v, %v", js, err)
	}

	if err := do("BF.RESERVE", "fixed", "0.01", "100", "NONSCALING"); err != nil {
		t.Fatal(err)
	}
	if err := do("BF.ADD", "fixed", "x"); err != nil {
		t.Fatal(err)
	}
	fixed := "redis://" + addr + "/fixed"
	if got := run(t, "", "test", fixed, "x", "y").stdout; got != "maybe\nno\n" {
		t.Errorf("test %s: %q", fixed, got)
	}
	if info := run(t, "", "info", fixed).ok(t); !strings.Contains(info, "none (non-scaling)") {
		t.Errorf("info of a non-scaling filter:\n%s", info)
	}

	if err := do("CF.RESERVE", "cf", "1000"); err != nil {
		t.Fatal(err)
	}
	for _, item := range []string{"a", "b", "c"} {
		if err := do("CF.ADD", "cf", item); err != nil {
			t.Fatal(err)
		}
	}
	if err := do("CF.DEL", "cf", "b"); err != nil {
		t.Fatal(err)
	}
	cf := "redis://" + addr + "/cf"
	if got := run(t, "", "test", cf, "a", "b", "c", "d").stdout; got != "maybe\nno\nmaybe\nno\n" {
		t.Errorf("test %s: %q", cf, got)
	}
	info = run(t, "", "info", cf).ok(t)
	for _, want := range []string{"TYPE MBbloomCF", "Number of buckets:", "Number of items inserted:", "Number of items deleted:", "Bucket size:", "Max iterations:"} {
		if !strings.Contains(info, want) {
			t.Errorf("info %s lacks %q:\n%s", cf, want, info)
		}
	}

	// Refusals, each saying what to do.
	rule := []string{"--rule", "spring-helper", "-n", "1000", "-p", "0.01"}
	run(t, "", append([]string{"test", url, "x"}, rule...)...).fails(t, "RedisBloom Bloom filter", "drop them")
	run(t, "", append([]string{"info", cf}, rule...)...).fails(t, "RedisBloom cuckoo filter", "drop them")
	run(t, "", "test", "redis://"+addr+"/missing", "x").fails(t, "does not exist")
	run(t, "", "info", "redis://"+addr+"/missing").fails(t, "does not exist")
	run(t, "", "info", url, "--plot", tempPath(t, "p.svg")).fails(t, "bloom pull")
	if err := do("SET", "str", "not bits"); err != nil {
		t.Fatal(err)
	}
	run(t, "", "test", "redis://"+addr+"/str", "x").fails(t, "plain Redis string", "--rule spring-helper")
	run(t, "", "info", "redis://"+addr+"/str").fails(t, "plain Redis string", "--rule spring-helper")
}

// TestModuleKeysBloomd: bloom test and bloom info on bloomd's filters.
func TestModuleKeysBloomd(t *testing.T) {
	addr, s := startBloomd(t, "", nil)
	checkModuleKeys(t, addr, func(args ...any) error {
		strs := make([]string, len(args))
		for i, a := range args {
			strs[i] = a.(string)
		}
		if reply := exec(s, strs...); strings.HasPrefix(reply, "-") {
			t.Fatalf("%v: %s", args, reply)
		}
		return nil
	})
}

// TestModuleKeysRedisBloom: the same on a real redis-server with the RedisBloom module named by
// REDISBLOOM_SO (skipped without it), and, on a real redis-server alone, a list is refused by
// its type and bloom info describes a plain string of bits given its parameters.
func TestModuleKeysRedisBloom(t *testing.T) {
	t.Run("plain", func(t *testing.T) {
		srv := redistest.New(t, nil)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer c.Close()
		ctx := context.Background()
		c.RPush(ctx, "alist", "x")
		run(t, "", "test", "redis://"+srv.Addr+"/alist", "x").fails(t, "holds a Redis list, not a filter")
		// A plain key pushed with its parameters is described from its bits.
		file := tempPath(t, "users.bloom")
		run(t, numbers(1, 500), "build", "-n", "1000", "-o", file).ok(t)
		explicit := []string{"--m", "9600", "--k", "7", "--scheme", "guava64", "--bit-order", "word"}
		url := "redis://" + srv.Addr + "/bloom:users"
		run(t, "", append([]string{"push", file, url}, explicit...)...).ok(t)
		info := run(t, "", append([]string{"info", url}, explicit...)...).ok(t)
		if !strings.Contains(info, "plain Redis string (m=9600 k=7 scheme=guava64 bit-order=word)") || !strings.Contains(info, "count:") {
			t.Errorf("info of a plain key:\n%s", info)
		}
		run(t, "", "info", url).fails(t, "plain Redis string", "parameters must be given")
	})
	t.Run("module", func(t *testing.T) {
		so := os.Getenv("REDISBLOOM_SO")
		if so == "" {
			t.Skip("REDISBLOOM_SO does not name the RedisBloom module; bloomd's filters are tested above")
		}
		srv := redistest.New(t, &redistest.Options{Args: []string{"--loadmodule", so}})
		c := redis.NewClient(&redis.Options{Addr: srv.Addr})
		defer c.Close()
		checkModuleKeys(t, srv.Addr, func(args ...any) error { return c.Do(context.Background(), args...).Err() })
	})
}
