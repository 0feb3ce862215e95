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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := server.Run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, server.ErrUsage) && !errors.Is(err, server.ErrDamagedLog) {
			fmt.Fprintln(os.Stderr, "bloomd:", err)
		}
		os.Exit(1)
	}
}
