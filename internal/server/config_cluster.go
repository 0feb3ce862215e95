package server

import (
	"errors"
	"math"
	"net"
	"strconv"
	"strings"

	"github.com/bloomd/bloom/internal/cluster"
)

// The cluster settings (internal/cluster), with redis.conf's names and Redis 7.0's defaults.
// cluster-enabled, cluster-config-file and cluster-port are fixed once the server runs; the
// others change at run time (CONFIG SET), as in Redis.
func init() {
	cc := func(c *Config) *cluster.Config { return &c.Cluster }
	yes := func(f func(c *cluster.Config) *bool) func(c *Config) string {
		return func(c *Config) string { return yesNo(*f(cc(c))) }
	}
	setYes := func(f func(c *cluster.Config) *bool) func(c *Config, v string) error {
		return yesNoParam(func(c *Config) *bool { return f(cc(c)) })
	}
	integer := func(f func(c *cluster.Config) *int) func(c *Config) string {
		return func(c *Config) string { return strconv.Itoa(*f(cc(c))) }
	}
	setInt := func(f func(c *cluster.Config) *int, lo, hi int) func(c *Config, v string) error {
		return intParam(func(c *Config) *int { return f(cc(c)) }, lo, hi)
	}
	params = append(params,
		param{"cluster-enabled", false, yes(func(c *cluster.Config) *bool { return &c.Enabled }), setYes(func(c *cluster.Config) *bool { return &c.Enabled })},
		param{"cluster-config-file", false, func(c *Config) string { return c.Cluster.ConfigFile }, func(c *Config, v string) error {
			if v == "" {
				return errors.New("needs a file name")
			}
			c.Cluster.ConfigFile = v
			return nil
		}},
		param{"cluster-node-timeout", true, func(c *Config) string { return strconv.FormatInt(c.Cluster.NodeTimeout, 10) }, func(c *Config, v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return errors.New("argument must be a positive number of milliseconds")
			}
			c.Cluster.NodeTimeout = n
			return nil
		}},
		param{"cluster-port", false, integer(func(c *cluster.Config) *int { return &c.Port }), setInt(func(c *cluster.Config) *int { return &c.Port }, 0, 65535)},
		param{"cluster-announce-ip", true, func(c *Config) string { return c.Cluster.AnnounceIP }, func(c *Config, v string) error {
			if v != "" && net.ParseIP(v) == nil {
				return errors.New("must be an IP address")
			}
			c.Cluster.AnnounceIP = v
			return nil
		}},
		param{"cluster-announce-port", true, integer(func(c *cluster.Config) *int { return &c.AnnouncePort }), setInt(func(c *cluster.Config) *int { return &c.AnnouncePort }, 0, 65535)},
		param{"cluster-announce-bus-port", true, integer(func(c *cluster.Config) *int { return &c.AnnounceBusPort }), setInt(func(c *cluster.Config) *int { return &c.AnnounceBusPort }, 0, 65535)},
		param{"cluster-announce-tls-port", true, integer(func(c *cluster.Config) *int { return &c.AnnounceTLSPort }), setInt(func(c *cluster.Config) *int { return &c.AnnounceTLSPort }, 0, 65535)},
		param{"cluster-announce-hostname", true, func(c *Config) string { return c.Cluster.AnnounceHostname }, func(c *Config, v string) error {
			probe := cluster.DefaultConfig()
			probe.AnnounceHostname = v
			if err := probe.Validate(); err != nil {
				return errors.New(strings.TrimPrefix(err.Error(), "cluster: cluster-announce-hostname: "))
			}
			c.Cluster.AnnounceHostname = v
			return nil
		}},
		param{"cluster-preferred-endpoint-type", true, func(c *Config) string { return c.Cluster.PreferredEndpoint }, func(c *Config, v string) error {
			switch v = strings.ToLower(v); v {
			case "ip", "hostname", "unknown-endpoint":
				c.Cluster.PreferredEndpoint = v
				return nil
			}
			return errors.New("argument(s) must be one of the following: ip, hostname, unknown-endpoint")
		}},
		param{"cluster-require-full-coverage", true, yes(func(c *cluster.Config) *bool { return &c.RequireFullCoverage }), setYes(func(c *cluster.Config) *bool { return &c.RequireFullCoverage })},
		param{"cluster-allow-reads-when-down", true, yes(func(c *cluster.Config) *bool { return &c.AllowReadsWhenDown }), setYes(func(c *cluster.Config) *bool { return &c.AllowReadsWhenDown })},
		param{"cluster-allow-pubsubshard-when-down", true, yes(func(c *cluster.Config) *bool { return &c.AllowPubsubShardWhenDown }), setYes(func(c *cluster.Config) *bool { return &c.AllowPubsubShardWhenDown })},
		param{"cluster-replica-validity-factor", true, integer(func(c *cluster.Config) *int { return &c.ReplicaValidityFactor }), setInt(func(c *cluster.Config) *int { return &c.ReplicaValidityFactor }, 0, math.MaxInt32)},
		param{"cluster-migration-barrier", true, integer(func(c *cluster.Config) *int { return &c.MigrationBarrier }), setInt(func(c *cluster.Config) *int { return &c.MigrationBarrier }, 0, math.MaxInt32)},
		param{"cluster-allow-replica-migration", true, yes(func(c *cluster.Config) *bool { return &c.AllowReplicaMigration }), setYes(func(c *cluster.Config) *bool { return &c.AllowReplicaMigration })},
		param{"cluster-replica-no-failover", true, yes(func(c *cluster.Config) *bool { return &c.ReplicaNoFailover }), setYes(func(c *cluster.Config) *bool { return &c.ReplicaNoFailover })},
		param{"cluster-link-sendbuf-limit", true, func(c *Config) string { return strconv.FormatInt(c.Cluster.LinkSendBufLimit, 10) }, func(c *Config, v string) error {
			n, err := parseMemory(v)
			if err != nil {
				return err
			}
			c.Cluster.LinkSendBufLimit = n
			return nil
		}},
	)
}

// validateCluster reports cluster settings that cannot work with the others.
func (c *Config) validateCluster() error {
	if !c.Cluster.Enabled {
		return nil
	}
	if c.ReplicaOf != "" {
		return errors.New("server: replicaof directive not allowed in cluster mode")
	}
	if c.Port == 0 {
		return errors.New("server: cluster mode needs a plain TCP port (port)")
	}
	return c.Cluster.Validate()
}

// applyCluster passes changed cluster settings (CONFIG SET) on.
func (s *Server) applyCluster(next *Config) {
	if s.cluster != nil {
		s.cluster.SetConfig(next.Cluster)
	}
}
