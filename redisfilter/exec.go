package redisfilter

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// call is one script invocation of a batch: its keys and arguments, the indexes (into the batch)
// of the filter keys it answers for, and, after run, its reply.
type call struct {
	script *redis.Script
	keys   []string
	args   []any
	want   string // the expected parameter line, for the mismatch message
	idx    []int  // batch index of each key the call answers for, in order
	cmd    *redis.Cmd
}

// run sends the calls in one round trip: a single EVALSHA, or one pipeline of them (which a
// cluster client splits by node and sends to the nodes in parallel). Calls refused with NOSCRIPT
// (a restarted or failed-over server, SCRIPT FLUSH) are sent again once with EVAL, which also
// caches the script, in a second round trip.
func run(ctx context.Context, c redis.UniversalClient, calls []*call) {
	if len(calls) == 1 {
		cl := calls[0]
		cl.cmd = cl.script.Run(ctx, c, cl.keys, cl.args...)
		return
	}
	pipe := c.Pipeline()
	for _, cl := range calls {
		cl.cmd = cl.script.EvalSha(ctx, pipe, cl.keys, cl.args...)
	}
	_, _ = pipe.Exec(ctx) // errors are read per command below
	var retry []*call
	for _, cl := range calls {
		if isNoScript(cl.cmd.Err()) {
			retry = append(retry, cl)
		}
	}
	if len(retry) == 0 {
		return
	}
	pipe = c.Pipeline()
	for _, cl := range retry {
		cl.cmd = cl.script.Eval(ctx, pipe, cl.keys, cl.args...)
	}
	_, _ = pipe.Exec(ctx)
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// callErr turns a failed call into this package's error: ErrConfigMismatch with the differing
// fields, ErrWrongType, or the client's error (network, timeout, context) with the operation and
// the filter named.
func callErr(op, name string, cl *call, err error) error {
	if redis.HasErrorPrefix(err, tooLongPrefix) {
		return tooLong(op, name, cl, err)
	}
	if redis.HasErrorPrefix(err, mismatchPrefix) {
		stored := strings.TrimSpace(strings.TrimPrefix(err.Error(), mismatchPrefix))
		if line, key, ok := strings.Cut(stored, " unexpected="); ok && line == cl.want {
			return fmt.Errorf("%w: %s %q: key %s exists beyond the chain's last link, so the chain cannot grow into it", ErrConfigMismatch, op, name, key)
		}
		return fmt.Errorf("%w: %s %q (key %s): %s", ErrConfigMismatch, op, name, cl.keys[0], describeMismatch(stored, cl.want))
	}
	return opErr(op, name, err)
}

// opErr wraps an error of a Redis command with the operation and the filter's name.
func opErr(op, name string, err error) error {
	if redis.HasErrorPrefix(err, "WRONGTYPE") {
		return fmt.Errorf("%w: %s %q: %w", ErrWrongType, op, name, err)
	}
	return fmt.Errorf("redisfilter: %s %q: %w", op, name, err)
}

// bitsReply decodes a script's per-key answer string of '0' and '1'.
func bitsReply(v any, want int) (string, error) {
	s, ok := v.(string)
	if !ok || len(s) != want {
		return "", fmt.Errorf("unexpected script reply %T %.40v (want %d answers)", v, v, want)
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '0' && s[i] != '1' {
			return "", fmt.Errorf("unexpected script reply %.40q", s)
		}
	}
	return s, nil
}
