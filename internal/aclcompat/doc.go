// Package aclcompat holds the tests that hold bloomd's users and permissions (Redis 6+ ACLs) to
// Redis's behaviour and to the programs that speak them. It has no code of its own.
//
// The differential tests start a real redis-server 7.0 and a bloomd on free loopback ports, give
// both the same users with ACL SETUSER, send both the same commands as each user, and require
// the same decisions: what is allowed, what is denied and with which error text, what ACL DRYRUN
// says, which ACL LOG entries a denial leaves, and what happens to a connection whose user is
// changed, disabled or deleted. The BF.* and CF.* commands, which Redis 7.0 only has with the
// RedisBloom module, are checked against the ACL categories RedisBloom registers in Redis 8, and
// (when REDISBLOOM_SO names the module file) against redis-server with the module loaded for the
// key permissions.
//
// The client tests log in with redis-cli (--user/--pass, -a), go-redis (Username, RESP2 and
// RESP3 through HELLO) and redis-py (username), and scrape bloomd with
// prometheus-redis-exporter as a user limited to what the exporter runs.
//
// Tests that need a program that is not installed skip with a message, unless the environment
// variable that CI sets for it (BLOOM_REQUIRE_REDIS, BLOOM_REQUIRE_EXPORTER) is 1.
package aclcompat
