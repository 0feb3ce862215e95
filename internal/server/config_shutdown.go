package server

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
)

// shutdown-on-sigint and shutdown-on-sigterm, as Redis 7.0 has them: what a signal's shutdown
// does. "default" saves a last snapshot when there are save rules, "save" always does, "nosave"
// never does. "now" and "force" are accepted and change nothing: bloomd never waits for
// replicas to catch up before it exits, and after a signal it exits even when the last save
// fails (it logs the failure and exits with status 1), as Redis does with force.

// A Signal is the cause that cmd/bloomd gives the context it passes to Run when a signal
// arrives (context.WithCancelCause), so that Run follows the signal's setting.
type Signal struct{ os.Signal }

func (s Signal) Error() string { return s.Signal.String() + " signal received" }

// shutdownFlags are the words of shutdown-on-sig*, in the order Redis's CONFIG GET gives them.
var shutdownFlags = []string{"save", "nosave", "now", "force"}

func init() {
	params = append(params,
		param{"shutdown-on-sigint", true, func(c *Config) string { return shutdownGet(c.ShutdownOnSigint) }, shutdownSet(func(c *Config) *string { return &c.ShutdownOnSigint })},
		param{"shutdown-on-sigterm", true, func(c *Config) string { return shutdownGet(c.ShutdownOnSigterm) }, shutdownSet(func(c *Config) *string { return &c.ShutdownOnSigterm })},
	)
}

func shutdownGet(v string) string {
	if v == "" {
		return "default"
	}
	return v
}

func shutdownSet(field func(c *Config) *string) func(c *Config, v string) error {
	return func(c *Config, v string) error {
		words := strings.Fields(strings.ToLower(v))
		if len(words) == 0 {
			return errors.New("argument(s) must be one or more of: default, save, nosave, now, force")
		}
		set := map[string]bool{}
		for _, w := range words {
			if w != "default" && !slices.Contains(shutdownFlags, w) {
				return errors.New("argument(s) must be one or more of: default, save, nosave, now, force")
			}
			set[w] = true
		}
		if set["save"] && set["nosave"] {
			return errors.New("shutdown options SAVE and NOSAVE can't be used simultaneously")
		}
		var out []string
		for _, f := range shutdownFlags {
			if set[f] {
				out = append(out, f)
			}
		}
		*field(c) = strings.Join(out, " ")
		return nil
	}
}

// signalSave reports whether the shutdown that ended ctx saves a last snapshot, given whether
// there are save rules, and names the signal for the log ("" if ctx ended otherwise).
func signalSave(ctx context.Context, cfg *Config, rules bool) (save bool, name string) {
	flags := cfg.ShutdownOnSigterm
	var sig Signal
	if errors.As(context.Cause(ctx), &sig) {
		name = sig.Signal.String()
		if sig.Signal == os.Interrupt {
			flags = cfg.ShutdownOnSigint
		}
	}
	words := strings.Fields(flags)
	switch {
	case slices.Contains(words, "save"):
		return true, name
	case slices.Contains(words, "nosave"):
		return false, name
	}
	return rules, name
}
