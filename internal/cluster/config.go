package cluster

import (
	"errors"
	"fmt"
	"net"
)

// Config holds a node's cluster settings, with redis.conf's names.
type Config struct {
	Enabled bool // cluster-enabled
	// ConfigFile (cluster-config-file) is the nodes file, relative to the data directory.
	ConfigFile string
	// NodeTimeout (cluster-node-timeout, ms) is how long a node may not answer before it is
	// suspected of failing.
	NodeTimeout int64
	// Port (cluster-port) is the bus port; 0 means the client port + 10000.
	Port int
	// Announce* (cluster-announce-ip, -port, -bus-port, -tls-port, -hostname) are the address
	// the node gives the others instead of the one they see; empty or 0 for none.
	AnnounceIP       string
	AnnouncePort     int
	AnnounceBusPort  int
	AnnounceTLSPort  int
	AnnounceHostname string
	// PreferredEndpoint (cluster-preferred-endpoint-type) is what redirections and CLUSTER
	// SLOTS name nodes by: "ip", "hostname" or "unknown-endpoint".
	PreferredEndpoint string
	// RequireFullCoverage (cluster-require-full-coverage): the cluster is down while a slot
	// has no working owner.
	RequireFullCoverage bool
	// AllowReadsWhenDown (cluster-allow-reads-when-down): serve reads while the cluster is down.
	AllowReadsWhenDown bool
	// AllowPubsubShardWhenDown (cluster-allow-pubsubshard-when-down).
	AllowPubsubShardWhenDown bool
	// ReplicaValidityFactor (cluster-replica-validity-factor): a replica whose link to its
	// primary has been down longer than NodeTimeout*factor (plus the ping period) does not try
	// to fail over; 0 means it always tries.
	ReplicaValidityFactor int
	// MigrationBarrier (cluster-migration-barrier): the replicas a primary keeps before one of
	// them may move to an orphaned primary.
	MigrationBarrier int
	// AllowReplicaMigration (cluster-allow-replica-migration).
	AllowReplicaMigration bool
	// ReplicaNoFailover (cluster-replica-no-failover): never fail over automatically.
	ReplicaNoFailover bool
	// LinkSendBufLimit (cluster-link-sendbuf-limit, bytes): a link whose unsent messages pass
	// it is closed; 0 means no limit.
	LinkSendBufLimit int64
}

// DefaultConfig returns Redis 7.0's defaults.
func DefaultConfig() Config {
	return Config{
		ConfigFile:               "nodes.conf",
		NodeTimeout:              15000,
		PreferredEndpoint:        "ip",
		RequireFullCoverage:      true,
		AllowPubsubShardWhenDown: true,
		ReplicaValidityFactor:    10,
		MigrationBarrier:         1,
		AllowReplicaMigration:    true,
	}
}

// Validate reports settings that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.NodeTimeout <= 0:
		return errors.New("cluster: cluster-node-timeout must be positive")
	case c.ConfigFile == "":
		return errors.New("cluster: cluster-config-file must not be empty")
	case c.Port < 0 || c.Port > 65535:
		return errors.New("cluster: cluster-port must be between 0 and 65535")
	case c.ReplicaValidityFactor < 0 || c.MigrationBarrier < 0:
		return errors.New("cluster: cluster-replica-validity-factor and cluster-migration-barrier must not be negative")
	}
	switch c.PreferredEndpoint {
	case "ip", "hostname", "unknown-endpoint":
	default:
		return fmt.Errorf("cluster: cluster-preferred-endpoint-type must be ip, hostname or unknown-endpoint, not %q", c.PreferredEndpoint)
	}
	if c.AnnounceIP != "" && net.ParseIP(c.AnnounceIP) == nil {
		return fmt.Errorf("cluster: cluster-announce-ip %q is not an IP address", c.AnnounceIP)
	}
	if err := validHostname(c.AnnounceHostname); err != nil {
		return fmt.Errorf("cluster: cluster-announce-hostname: %w", err)
	}
	return nil
}

// validHostname checks cluster-announce-hostname as Redis 7.0 does.
func validHostname(h string) error {
	if len(h) >= 256 {
		//lint:ignore ST1005 Redis 7.0's wording
		return errors.New("Hostnames must be less than 256 characters")
	}
	for _, c := range h {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			//lint:ignore ST1005 Redis 7.0's wording
			return errors.New("Hostnames may only contain alphanumeric characters, hyphens or dots")
		}
	}
	return nil
}

// BusPort returns the bus port for a node whose client port is port.
func (c *Config) BusPort(port int) int {
	if c.Port != 0 {
		return c.Port
	}
	return port + portIncr
}

// portIncr is the default distance from the client port to the bus port.
const portIncr = 10000
