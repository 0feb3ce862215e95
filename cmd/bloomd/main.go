// Command bloomd is a Bloom filter server compatible with RedisBloom: any Redis client can use
// its BF.* commands over RESP2 or RESP3. Run "bloomd --help" for its settings.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/bloomd/bloom/internal/server"
)

func main() {
	// The signal becomes the context's cause, for shutdown-on-sigint and shutdown-on-sigterm.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() { cancel(server.Signal{Signal: <-sigs}) }()
	if err := server.Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, server.ErrUsage) && !errors.Is(err, server.ErrDamagedLog) {
			fmt.Fprintln(os.Stderr, "bloomd:", err)
		}
		os.Exit(1)
	}
}
