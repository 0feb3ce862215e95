package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestScriptEffectsSurviveKill runs scripts on two connections of a real bloomd with
// appendfsync always: the Spring example's BF.ADD script, a script that writes a filter and a
// string, one that fails after writing (its write stays, as in Redis), and a read-only one.
// After kill -9 and a restart every acknowledged effect is there, and the log holds the
// effects (MULTI/EXEC of the commands scripts ran), never a script.
func TestScriptEffectsSurviveKill(t *testing.T) {
	bin := build(t)
	dir := t.TempDir()
	d := start(t, bin, dir, "--appendfsync", "always", "--save", "")
	ctx := context.Background()
	add := redis.NewScript("return redis.call('BF.ADD', KEYS[1], KEYS[2])")
	both := redis.NewScript("redis.call('BF.ADD', KEYS[1], ARGV[1]) redis.call('SET', KEYS[2], ARGV[1]) return 1")
	failing := redis.NewScript("redis.call('SET', KEYS[1], ARGV[1]) error('after the write')")
	read := redis.NewScript("return redis.call('BF.EXISTS', KEYS[1], KEYS[2])")

	var wg sync.WaitGroup
	acked := make([][]string, 2)
	errs := make([]error, 2)
	for w := range 2 {
		wg.Go(func() {
			c := client(t, d.addr)
			for i := range 300 {
				item := fmt.Sprintf("w%d-%d", w, i)
				var err error
				switch i % 4 {
				case 0:
					err = add.Run(ctx, c, []string{"spring", item}).Err()
				case 1:
					err = both.Run(ctx, c, []string{"both", "str:" + item}, item).Err()
				case 2:
					if e := failing.Run(ctx, c, []string{"fail:" + item}, item).Err(); e == nil {
						err = fmt.Errorf("the failing script succeeded")
					}
				case 3:
					err = read.Run(ctx, c, []string{"spring", item}).Err()
				}
				if err != nil {
					errs[w] = fmt.Errorf("%s: %w", item, err)
					return
				}
				acked[w] = append(acked[w], item)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	d.cmd.Process.Kill()
	<-d.exited

	logs, _ := filepath.Glob(filepath.Join(dir, "appendonly.aof.*"))
	var all []byte
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		all = append(all, b...)
	}
	if bytes.Contains(all, []byte("redis.call")) || !bytes.Contains(all, []byte("MULTI")) {
		t.Errorf("the log holds a script, or no MULTI/EXEC of a script's effects (%d bytes in %v)", len(all), logs)
	}

	d = start(t, bin, dir)
	c := client(t, d.addr)
	n := 0
	for _, items := range acked {
		for i, item := range items {
			var got string
			var err error
			switch i % 4 {
			case 0:
				v, e := c.Do(ctx, "BF.EXISTS", "spring", item).Int()
				got, err = fmt.Sprint(v), e
			case 1:
				v, e := c.Do(ctx, "BF.EXISTS", "both", item).Int()
				s, e2 := c.Get(ctx, "str:"+item).Result()
				got, err = fmt.Sprint(v)+s, errors.Join(e, e2)
				if got == "1"+item {
					got = "1"
				}
			case 2:
				got, err = c.Get(ctx, "fail:"+item).Result()
				if got == item {
					got = "1"
				}
			default:
				continue
			}
			if got != "1" || err != nil {
				t.Fatalf("after kill -9, the effect of %s is lost: %q %v", item, got, err)
			}
			n++
		}
	}
	t.Logf("%d acknowledged script effects, all present after kill -9", n)
	d.stop(t)
}
