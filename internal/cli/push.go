package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
	"github.com/spf13/cobra"
)

func newPushCmd(e *env) *cobra.Command {
	var from fileFormat
	var force bool
	var rf remoteFlags
	var pf plainFlags
	cmd := &cobra.Command{
		Use:   "push FILE " + urlForm,
		Short: "Copy a filter into bloomd or Redis with RedisBloom",
		Long: `push loads a filter file into a key of bloomd, or of a Redis server with the RedisBloom
module, with BF.LOADCHUNK: the header, then the bits in chunks of up to 16 MiB, with a
progress bar on stderr when it is a terminal. The filter must be one RedisBloom can hold: a
RedisBloom dump (bloom build --format redisbloom, bloom pull), or a classic filter hashed with
redisbloom64.

The chunks go to a temporary key that is renamed to KEY only when all have arrived, so readers
of KEY never see a half-loaded filter and a failed push leaves KEY as it was. An existing KEY
is replaced only with --force. Without a password in the URL, REDISCLI_AUTH gives one.

With --m --k --scheme --bit-order, or --rule spring-helper -n -p, push writes a classic filter
with exactly those parameters as a plain Redis string of bits instead (as Java services keep
with SETBIT and the Spring BloomFilterHelper), through a temporary key renamed at the end.`,
		Example: `  bloom push seen.bfdump redis://localhost:6379/seen
  bloom push --force seen.bfdump rediss://:s3cret@cache.internal:6380/seen
  REDISCLI_AUTH=s3cret bloom push seen.bfdump redis://10.0.0.5/crawler:seen
  bloom push users.bloom redis://localhost/bloom:users --rule spring-helper -n 1000000 -p 0.01`,
		Args: argsUsage(2, 2, "bloom push FILE "+urlForm),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseRedisURL(args[1])
			if err != nil {
				return err
			}
			f, err := readFilter(args[0], from, e.stdin)
			if err != nil {
				return err
			}
			var pieces [][]byte // a plain key's bytes, in pieces of at most 16 MiB
			var chain *redisbloom.Chain
			if pf.given() {
				params, err := pf.params()
				if err != nil {
					return err
				}
				cf, ok := f.native.(*bloom.Filter)
				if !ok {
					return fmt.Errorf("%s cannot be pushed as a plain Redis key: it is not a classic filter", args[0])
				}
				raw, err := plainBytes(cf, params)
				if err != nil {
					return fmt.Errorf("%s cannot be pushed as %s: %w", args[0], params, err)
				}
				for len(raw) > 0 {
					n := min(len(raw), 16<<20)
					pieces, raw = append(pieces, raw[:n]), raw[n:]
				}
			} else if chain, err = f.toChain(); err != nil {
				return fmt.Errorf("%s cannot be pushed: %w", args[0], err)
			}
			ctx := cmd.Context()
			c, err := rf.connect(ctx, t)
			if err != nil {
				return err
			}
			defer c.Close()
			if !force {
				n, err := c.Exists(ctx, t.key).Result()
				if err != nil {
					return serverError(t, err)
				}
				if n > 0 {
					return fmt.Errorf("%s already exists; pass --force to replace it", t.display)
				}
			}
			var total uint64
			if chain != nil {
				for _, l := range chain.Links() {
					total += l.Bytes
				}
			}
			for _, p := range pieces {
				total += uint64(len(p))
			}
			var sent atomic.Int64
			var prog *progress
			if rf.progress.enabled(e) {
				prog = startProgress(e.stderr, "pushing", int64(total), sent.Load, nil)
			}
			tmp := t.key + ":bloom-push:" + randomHex()
			chunks := 0
			err = func() error {
				if chain == nil {
					// A plain key: its bytes, appended to the temporary key piece by piece.
					for _, data := range pieces {
						if err := ctx.Err(); err != nil {
							return err
						}
						if err := c.Append(ctx, tmp, string(data)).Err(); err != nil {
							return serverError(t, err)
						}
						sent.Add(int64(len(data)))
						chunks++
					}
				}
				if chain != nil {
					for it, data := range chain.Chunks() {
						if err := ctx.Err(); err != nil {
							return err
						}
						if err := c.Do(ctx, "BF.LOADCHUNK", tmp, it, data).Err(); err != nil {
							return serverError(t, err)
						}
						if it != 1 {
							sent.Add(int64(len(data)))
							chunks++
						}
					}
				}
				if force {
					return c.Rename(ctx, tmp, t.key).Err()
				}
				ok, err := c.RenameNX(ctx, tmp, t.key).Result()
				if err == nil && !ok {
					return fmt.Errorf("%s was created by someone else during the push; pass --force to replace it", t.display)
				}
				return err
			}()
			prog.finish()
			if err != nil {
				// Best effort, on a fresh context: the push may have been interrupted.
				c.Del(context.WithoutCancel(ctx), tmp)
				if _, ok := err.(interface{ RedisError() }); ok {
					err = serverError(t, err)
				}
				return err
			}
			var items uint64
			if chain != nil {
				items = chain.Card()
			} else {
				items = f.native.(*bloom.Filter).ApproximateCount()
			}
			fmt.Fprintf(e.stdout, "pushed %s to %s: %s in %s, %s\n", args[0], t.display,
				bloom.FormatBytes(total), plural(uint64(chunks), "chunk"), plural(items, "item"))
			return nil
		},
	}
	cmd.Flags().Var(&from, "from", fromHelp)
	cmd.Flags().BoolVar(&force, "force", false, "replace KEY if it exists")
	rf.register(cmd)
	pf.register(cmd)
	return cmd
}

// randomHex returns 8 random bytes in hex, to name a temporary key.
func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
