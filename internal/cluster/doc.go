// Package cluster makes bloomd a node of a Redis Cluster: it speaks Redis 7.0's cluster bus
// (cluster.h and cluster.c of redis 7.0.15), keeps the nodes file in Redis's format, and
// decides where a command's keys are served, so that redis-cli --cluster creates, checks,
// reshards and fails over bloomd nodes, alone or mixed with redis-server nodes, and every
// cluster client (go-redis ClusterClient, redis-py RedisCluster, ...) follows its MOVED and
// ASK redirections unchanged.
//
// # The bus
//
// Messages are Redis 7.0's, byte for byte (message.go): the 2256-byte header with the sender's
// epochs, replication offset, slots and flags, then PING, PONG and MEET with their gossip
// sections and the hostname ping extension, FAIL, PUBLISH and PUBLISHSHARD, UPDATE, the
// failover votes (FAILOVER_AUTH_REQUEST and ACK) and MFSTART. Messages recorded between real
// redis-server 7.0 nodes (testdata/bus) decode and encode back to the same bytes
// (TestGoldenMessages); the header's offsets are Redis's (TestHeaderOffsets). Decode checks a
// message at least as strictly as Redis does before it acts on one, and more: an extension
// shorter than its own header, or extensions counted without the flag that announces them, are
// refused where Redis would read past them (TestDecodeRejects); whatever the bytes, it returns
// an error wrapping ErrMalformed or a message that encodes back to them (FuzzDecode). A
// connection whose first bytes are not a message is closed; a well-framed bad message is
// logged, at most once a second per link, and ignored, as Redis ignores it. ReadFrame grows
// its buffer only as bytes arrive, so a length that lies costs no memory. MODULE messages are
// read and dropped: bloomd loads no modules, so it is the Redis node without the module.
//
// Names, addresses and hostnames from the bus end up in CLUSTER NODES and the nodes file, one
// line per node of blank-separated fields. Redis takes them as they come, so a node that gossips
// a name with a blank or an address with a newline can leave a nodes file that no longer loads;
// bloomd refuses a message whose sender is not a node ID or whose announced address is not an IP
// address, skips such gossip sections, drops a hostname Redis would not accept as
// cluster-announce-hostname, and never takes the myself flag from gossip (TestSimMalformedNames).
// Whatever a message says, the node does not panic and its nodes file stays loadable
// (FuzzReceive).
//
// # The state machine
//
// A Cluster is the cluster as one node sees it, and follows clusterProcessPacket, clusterCron
// and clusterBeforeSleep: gossip, PFAIL after cluster-node-timeout without an answer, FAIL once
// a majority of the primaries with slots reported it (failure reports valid for twice the node
// timeout), FAIL messages, config epochs with Redis's collision handling (the smaller ID moves
// on), UPDATE messages to a node with an old view of its slots, replica elections (a delay of
// 500-1000 ms plus a second per rank, votes counted per epoch, one vote per epoch and per
// primary every two node timeouts, cluster-replica-validity-factor), promotion, manual
// failover (CLUSTER FAILOVER with MFSTART and the paused primary's offset; FORCE; TAKEOVER),
// replica migration (cluster-migration-barrier, cluster-allow-replica-migration) and the
// cluster state (cluster-require-full-coverage, the rejoin delay after a minority partition).
// Each event (a message, a connection, a tick, a command) runs under the Cluster's lock as
// Redis runs it on its thread, and ends as Redis's event loop iteration ends: pending failover
// steps, the state and the nodes file first, then the queued messages go out, so that a vote
// is on disk before it is sent.
//
// The state machine does no I/O of its own: an Env gives it the clock, chance and the network,
// and a Host the server's keys, replication and clients. Bus is the real Env. The tests run
// many Clusters on a simulated network and clock (sim_test.go), so that minutes of cluster life
// with kills, partitions and restarts take a fraction of a second and repeat exactly: creation
// as redis-cli does it (TestSimCreate), failure detection and an elected replica taking over
// within a few seconds of a 1 s node timeout, the old primary returning as its replica
// (TestSimFailover), no FAIL without a majority (TestSimNoMajority), manual failover with the
// primary paused and the replica caught up (TestSimManualFailover), TAKEOVER without a majority
// (TestSimTakeover), epoch collisions (TestSimEpochCollision), replica migration and its
// barrier (TestSimReplicaMigration, TestSimNoReplicaMigration), the validity factor
// (TestSimValidityFactor), cluster-replica-no-failover (TestSimReplicaNoFailover), coverage
// (TestSimFullCoverage), announced hostnames (TestSimHostnames), keys loaded at start
// reconciled with the slots (TestSimVerifyData), and forgotten nodes kept out for a minute,
// their forged epochs ignored and logged (TestSimForget).
//
// Replication within a shard is the server's own (internal/repl): the Cluster tells its Host to
// replicate a primary (CLUSTER REPLICATE, a failover's loser, replica migration) or to stop
// (a failover's winner), and reads the replication offset for the bus's headers, ranks and
// manual failovers. Host actions that must wait for the server's commands (deleting the keys of
// a slot this node lost) run after the event, in order, outside the lock.
//
// # The nodes file
//
// cluster-config-file is CLUSTER NODES plus a vars line, as Redis writes it; a file written by
// redis-server 7.0 (a replica with a hostname, a migrating and an importing slot) loads and is
// written back the same (TestNodesFileFromRedis), and a node restarted from its file has the
// same view (TestRestartKeepsState). A damaged file stops the node naming the line
// (TestNodesFileDamaged). Unlike Redis, which rewrites the file in place, bloomd writes a
// temporary file, syncs it, renames it over the old one and syncs the directory; so the lock
// that keeps two nodes off one file is on a companion file, cluster-config-file + ".lock"
// (TestNodesFileLocked). A save that fails is logged as an error and the node goes on serving
// (Redis exits).
//
// # Keys and redirections
//
// KeySlot is Redis's: CRC-16/XMODEM of the hash tag, 14 bits (TestKeySlotGolden, against
// CLUSTER KEYSLOT of redis-server 7.0). Route is a snapshot of who serves what, republished
// after each change and read with one atomic load, so the check on every command takes no lock
// and allocates nothing (TestQueryAllocs); Check follows getNodeByQuery: -CROSSSLOT, -MOVED,
// -ASK for a missing key of a slot being migrated, -TRYAGAIN for a multi-key command over a
// slot in motion, ASKING on the importing node, READONLY on a replica, -CLUSTERDOWN with
// cluster-allow-reads-when-down (TestRouteCheck).
//
// # In bloomd
//
// internal/server makes a node of bloomd with cluster-enabled yes: the settings, the CLUSTER
// command (its replies and errors equal a redis-server 7.0 node's, TestClusterTranscript), the
// routing of every command's keys by its key specs before it runs or is queued, a transaction's
// keys together at EXEC (a session of redirections equal on two-node Redis and bloomd clusters,
// TestClusterRoutingMatchesRedis), the keys of each slot, PUBLISH over the bus, and the Host.
// Real processes on loopback prove the whole: redis-cli --cluster create and check of six
// bloomd nodes, with go-redis's ClusterClient and redis-py's RedisCluster adding to and testing
// filters in every slot, READONLY on a replica (TestCreateSixBloomdNodes); three redis-server and
// three bloomd nodes in one cluster, each seeing every other as a healthy peer, PUBLISH both ways
// (TestMixedCluster); kill -9 of a primary under a load of adds each followed by WAIT 1: the
// replica elected and promoted within the node timeout and a few seconds, no acknowledged add
// lost (TestFailoverUnderLoad); CLUSTER FAILOVER under load, no failure flagged, no answered add
// lost (TestManualFailoverUnderLoad); garbage, truncated, oversized, unknown and forged messages
// on the bus, each logged, the node unharmed and its view unchanged (TestHostileBusTraffic);
// in a cluster of two redis-server and two bloomd primaries with a replica each, a killed
// bloomd primary is replaced with the Redis primaries' votes and a killed Redis primary with the
// bloomd primaries' (TestMixedFailover).
// Moving keys between nodes (TestMixedClusterReshard, TestReshardFilterUnderLoad) needs MIGRATE,
// and skips until bloomd has it.
//
// # Not supported
//
// TLS on the bus (tls-cluster), module messages, and shard channels (SPUBLISH, SSUBSCRIBE: a
// PUBLISHSHARD message is delivered to the node's subscribers as a PUBLISH is). The commands
// that Redis 7.2 added (CLUSTER MYSHARDID, the shard-ID and forgotten-node ping extensions) are
// not in 7.0, and not here; a 7.2 node's extensions are logged and ignored, as a 7.0 node does.
package cluster
