package cli

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/bloomd/bloom"
	"github.com/bloomd/bloom/redisfilter"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// A plain Redis key is a filter that is nothing but one Redis string of bits, written with
// SETBIT by programs that agree on its parameters in code (the Spring BloomFilterHelper of Java
// services is the common one). Nothing beside the bits records the parameters, so pull, push and
// test take them as flags: --m --k --scheme --bit-order, or --rule spring-helper -n -p.

// plainFlags are the flags that name a plain key's parameters.
type plainFlags struct {
	m, k, scheme, order string
	rule, n, p          string
}

const ruleSpringHelper = "spring-helper"

func (pf *plainFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&pf.m, "m", "m", "", "plain Redis key: its size in bits, the modulus of every position (not rounded)")
	f.StringVarP(&pf.k, "k", "k", "", "plain Redis key: the number of bits per item")
	f.StringVar(&pf.scheme, "scheme", "", "plain Redis key: how items become positions: guava64, guava32, redisbloom64 or redisson")
	f.StringVar(&pf.order, "bit-order", "", "plain Redis key: setbit (bit i is SETBIT offset i) or word (this project's native order)")
	f.StringVar(&pf.rule, "rule", "", "plain Redis key: "+ruleSpringHelper+" takes m and k from -n and -p as the Spring BloomFilterHelper does, with guava32 and setbit")
	f.StringVarP(&pf.n, "items", "n", "", "with --rule: the expected insertions the Java code passes")
	f.StringVarP(&pf.p, "rate", "p", "", "with --rule: the false-positive rate the Java code passes")
}

// given reports whether any of the flags was given.
func (pf *plainFlags) given() bool {
	return pf.m != "" || pf.k != "" || pf.scheme != "" || pf.order != "" || pf.rule != "" || pf.n != "" || pf.p != ""
}

// params parses the flags into a plain key's parameters: either --rule spring-helper with -n and
// -p (and, optionally, --scheme guava32 and --bit-order setbit, which it implies), or all of --m,
// --k, --scheme and --bit-order.
func (pf *plainFlags) params() (redisfilter.PlainParams, error) {
	var p redisfilter.PlainParams
	if pf.rule != "" {
		if pf.rule != ruleSpringHelper {
			return p, fmt.Errorf("--rule %s is not known; the one rule is %s (with -n and -p)", quote(pf.rule), ruleSpringHelper)
		}
		if pf.m != "" || pf.k != "" {
			return p, fmt.Errorf("--rule %s computes m and k from -n and -p; drop --m and --k, or drop --rule", ruleSpringHelper)
		}
		if pf.n == "" || pf.p == "" {
			return p, fmt.Errorf("--rule %s needs -n (expected insertions) and -p (false-positive rate), as the Java code passes them", ruleSpringHelper)
		}
		n, err := parseCount(pf.n)
		if err != nil {
			return p, fmt.Errorf("-n: %w", err)
		}
		rate, err := parseRate(pf.p)
		if err != nil {
			return p, fmt.Errorf("-p: %w", err)
		}
		if p, err = redisfilter.SpringHelper(n, rate); err != nil {
			return p, fmt.Errorf("--rule %s: %w", ruleSpringHelper, err)
		}
		if pf.scheme != "" && pf.scheme != bloom.Guava32.String() {
			return p, fmt.Errorf("--rule %s hashes with guava32, not %s; drop --scheme", ruleSpringHelper, pf.scheme)
		}
		if pf.order != "" && pf.order != redisfilter.SetBitOrder.String() {
			return p, fmt.Errorf("--rule %s writes in setbit order, not %s; drop --bit-order", ruleSpringHelper, pf.order)
		}
		return p, nil
	}
	if pf.n != "" || pf.p != "" {
		return p, fmt.Errorf("-n and -p go with --rule %s; or give --m and --k", ruleSpringHelper)
	}
	var missing []string
	for _, f := range []struct{ name, val string }{{"--m", pf.m}, {"--k", pf.k}, {"--scheme", pf.scheme}, {"--bit-order", pf.order}} {
		if f.val == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return p, fmt.Errorf("a plain Redis key needs --m, --k, --scheme and --bit-order (missing %v), or --rule %s -n N -p P", missing, ruleSpringHelper)
	}
	m, err := parseBits(pf.m)
	if err != nil {
		return p, fmt.Errorf("--m: %w", err)
	}
	k, err := parseCount(pf.k)
	if err != nil || k < 1 || k > bloom.MaxK {
		return p, fmt.Errorf("--k %s is not a number of bits per item from 1 to %d", quote(pf.k), bloom.MaxK)
	}
	s, err := bloom.ParseScheme(pf.scheme)
	if err != nil {
		return p, fmt.Errorf("--scheme %s is not known: want guava64, guava32, redisbloom64 or redisson", quote(pf.scheme))
	}
	o, err := redisfilter.ParseBitOrder(pf.order)
	if err != nil {
		return p, fmt.Errorf("--bit-order %s is not known: want setbit or word", quote(pf.order))
	}
	p = redisfilter.PlainParams{M: m, K: int(k), Scheme: s, Order: o}
	if err := p.Validate(); err != nil {
		return p, fmt.Errorf("%s: %w", p, err)
	}
	return p, nil
}

// plainError explains a redisfilter error about a plain key.
func plainError(t redisTarget, p redisfilter.PlainParams, err error) error {
	switch {
	case errors.Is(err, redisfilter.ErrNotFound):
		return fmt.Errorf("%s holds no filter: the key does not exist", t.display)
	case errors.Is(err, redisfilter.ErrWrongType):
		return fmt.Errorf("%s is not a plain Redis string of bits (it holds another type of value)", t.display)
	case errors.Is(err, redisfilter.ErrConfigMismatch):
		return fmt.Errorf("%s does not fit %s: %w", t.display, p, err)
	case errors.Is(err, context.Canceled):
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return serverError(t, err)
	}
	return fmt.Errorf("%s: %w", t.display, err)
}

// pullPlain reads the plain key of t into an in-process filter with p's parameters.
func pullPlain(ctx context.Context, c redis.UniversalClient, t redisTarget, p redisfilter.PlainParams) (*bloom.Filter, error) {
	f, err := redisfilter.OpenPlain(ctx, c, t.key, p, nil)
	if err != nil {
		return nil, plainError(t, p, err)
	}
	snap, err := f.Snapshot(ctx)
	if err != nil {
		return nil, plainError(t, p, err)
	}
	return snap, nil
}

// plainBytes returns the bits of f as a plain key in order o stores them: ceil(m/8) bytes.
// f must have p's parameters.
func plainBytes(f *bloom.Filter, p redisfilter.PlainParams) ([]byte, error) {
	if f.M() != p.M || f.K() != p.K || f.Scheme() != p.Scheme {
		return nil, fmt.Errorf("the file holds a %s filter with m=%d k=%d, not the %s the flags give; its items would land on other bits", f.Scheme(), f.M(), f.K(), p)
	}
	raw := make([]byte, (p.M+7)/8)
	if _, err := f.ReadAt(raw, 0); err != nil {
		return nil, err
	}
	if p.Order == redisfilter.SetBitOrder {
		for i, c := range raw {
			raw[i] = bits.Reverse8(c)
		}
	}
	return raw, nil
}
