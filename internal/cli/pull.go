package cli

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisbloom"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

func newPullCmd(e *env) *cobra.Command {
	to := formatRedisBloom
	var force bool
	var rf remoteFlags
	var pf plainFlags
	cmd := &cobra.Command{
		Use:   "pull " + urlForm + " FILE",
		Short: "Copy a filter out of bloomd or Redis with RedisBloom",
		Long: `pull reads a filter from a key of bloomd, or of a Redis server with the RedisBloom module,
with BF.SCANDUMP, and writes it to FILE: by default as a RedisBloom dump, which holds any
such filter and which bloom push loads back; --to native works while the filter has one
sub-filter. A progress bar is drawn on stderr when it is a terminal.

Every chunk is checked against the header before it is used, and FILE is written only once
the whole filter has arrived. Items added while the pull runs may be partly included: pull
when writers are quiet for an exact copy. Without a password in the URL, REDISCLI_AUTH
gives one.

With --m --k --scheme --bit-order, or --rule spring-helper -n -p, pull reads a plain Redis
string of bits instead (as Java services keep with SETBIT and the Spring BloomFilterHelper), with
one GET, and writes it as a native file (--to native, the default then). The string must not be
longer than m bits allow.`,
		Example: `  bloom pull redis://localhost:6379/seen seen.bfdump
  bloom pull rediss://:s3cret@cache.internal:6380/seen seen.bfdump
  bloom pull redis://localhost/users users.bloom --to native
  bloom pull redis://localhost/bloom:users users.bloom --rule spring-helper -n 1000000 -p 0.01
  bloom pull redis://localhost/bloom:users users.bloom --m 9585058 --k 7 --scheme guava32 --bit-order setbit`,
		Args: argsUsage(2, 2, "bloom pull "+urlForm+" FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseRedisURL(args[0])
			if err != nil {
				return err
			}
			if to == formatAuto {
				return fmt.Errorf("--to: give native, guava or redisbloom")
			}
			if err := checkOutput(args[1], force); err != nil {
				return err // before pulling anything
			}
			var params redisfilter.PlainParams
			if pf.given() {
				if params, err = pf.params(); err != nil {
					return err
				}
				if !cmd.Flags().Changed("to") {
					to = formatNative
				}
			}
			ctx := cmd.Context()
			c, err := rf.connect(ctx, t)
			if err != nil {
				return err
			}
			defer c.Close()
			if pf.given() {
				snap, err := pullPlain(ctx, c, t, params)
				if err != nil {
					return err
				}
				if err := writeFilter(e, args[1], &filter{native: snap, format: formatNative}, to, force); err != nil {
					return err
				}
				if args[1] != "-" {
					fmt.Fprintf(e.stdout, "pulled %s to %s: %s, %s, about %s\n", t.display, args[1],
						bloom.FormatBytes(uint64(params.M+7)/8), params, plural(snap.ApproximateCount(), "item"))
				}
				return nil
			}
			scandump := func(it int64) (int64, []byte, error) {
				v, err := c.Do(ctx, "BF.SCANDUMP", t.key, it).Slice()
				if err != nil {
					if err == redis.Nil || strings.Contains(err.Error(), "not found") {
						return 0, nil, fmt.Errorf("%s holds no filter: the key does not exist", t.display)
					}
					if strings.HasPrefix(err.Error(), "WRONGTYPE") {
						return 0, nil, fmt.Errorf("%s is not a Bloom filter (it holds another type of value)", t.display)
					}
					return 0, nil, serverError(t, err)
				}
				if len(v) != 2 {
					return 0, nil, fmt.Errorf("%s answered BF.SCANDUMP with %d values, not 2: is it RedisBloom?", t.addr, len(v))
				}
				next, ok1 := v[0].(int64)
				data, ok2 := v[1].(string)
				if !ok1 || !ok2 {
					return 0, nil, fmt.Errorf("%s answered BF.SCANDUMP with %T and %T, not an iterator and data: is it RedisBloom?", t.addr, v[0], v[1])
				}
				return next, []byte(data), nil
			}
			next, header, err := scandump(0)
			if err != nil {
				return err
			}
			if next != 1 {
				return fmt.Errorf("%s began BF.SCANDUMP at iterator %d, not 1: is it RedisBloom?", t.addr, next)
			}
			chain, err := redisbloom.LoadHeader(header, nil)
			if err != nil {
				return fmt.Errorf("%s sent a filter header that is refused: %w", t.display, err)
			}
			var total uint64
			for _, l := range chain.Links() {
				total += l.Bytes
			}
			var got atomic.Int64
			var prog *progress
			if rf.progress.enabled(e) {
				prog = startProgress(e.stderr, "pulling", int64(total), got.Load, nil)
			}
			chunks := 0
			// Each reply must move the iterator forward by exactly its length, so the loop ends
			// after at most total bytes, however the server splits them.
			err = func() error {
				it := int64(1)
				for {
					if err := ctx.Err(); err != nil {
						return err
					}
					next, data, err := scandump(it)
					if err != nil {
						return err
					}
					if next == 0 && len(data) == 0 {
						break
					}
					if len(data) == 0 || next != it+int64(len(data)) || uint64(next-1) > total {
						return fmt.Errorf("%s sent an inconsistent dump (iterator %d after %d with %d bytes); did the filter grow during the pull? Try again", t.display, next, it, len(data))
					}
					if err := chain.LoadChunk(next, data); err != nil {
						return fmt.Errorf("%s sent a chunk that does not fit its header: %w", t.display, err)
					}
					got.Add(int64(len(data)))
					chunks++
					it = next
				}
				if uint64(it-1) != total {
					return fmt.Errorf("%s ended the dump after %d of %d bytes; did the filter change during the pull? Try again", t.display, it-1, total)
				}
				return nil
			}()
			prog.finish()
			if err != nil {
				return err
			}
			if err := writeFilter(e, args[1], &filter{chain: chain, format: formatRedisBloom}, to, force); err != nil {
				return err
			}
			if args[1] != "-" {
				fmt.Fprintf(e.stdout, "pulled %s to %s: %s in %s, %s\n", t.display, args[1],
					bloom.FormatBytes(total), plural(uint64(chunks), "chunk"), plural(chain.Card(), "item"))
			}
			return nil
		},
	}
	cmd.Flags().Var(&to, "to", "format of FILE: redisbloom, native (one sub-filter only; used for a plain key when --to is not given) or guava (never for RedisBloom: its hashing is not Guava's)")
	cmd.Flags().BoolVar(&force, "force", false, forceHelp)
	rf.register(cmd)
	pf.register(cmd)
	return cmd
}
