// Package aclcompat holds the tests that hold bloomd's users and permissions (Redis 6+ ACLs) to
// Redis's behaviour and to the programs that speak them. It has no code of its own.
//
// The differential tests start a real redis-server 7.0 and a bloomd on free loopback ports, give
// both the same users, send both the same commands and require the same answers:
//
//   - TestACLGrid: users x commands x keys, in RESP2 and RESP3 (GET, SET, DEL, EXISTS, TYPE,
//     EXPIRE, TTL, STRLEN, RENAME, KEYS, SCAN, CONFIG GET/SET, INFO, SAVE, FLUSHDB, FLUSHALL,
//     CLIENT ..., PUBLISH, ACL WHOAMI/LIST, MULTI/EXEC): every command allowed or denied alike,
//     denials with the same error text, the same ACL LOG entries; ACL DRYRUN of every cell and
//     of SHUTDOWN and SUBSCRIBE, which the grid does not run.
//   - TestACLAuth and TestACLSubscribe: AUTH and HELLO with right and wrong passwords, missing
//     and disabled users; channel permissions of SUBSCRIBE and PSUBSCRIBE.
//   - TestACLRules and TestCommandCategories: ACL SETUSER rules, valid and refused, with what
//     each user may then run (ACL DRYRUN of every command both servers have); the categories
//     and key-spec flags COMMAND gives; ACL CAT.
//   - TestACLFile: ACL LOAD of valid and malformed ACL files, ACL SAVE then LOAD.
//   - TestACLConnectionEffects: what an open connection sees when its user is deleted,
//     switched off, reset, or given other commands, keys or channels.
//
// The BF.* and CF.* commands, which Redis 7.0 only has with the RedisBloom module, are checked
// against the ACL categories RedisBloom registers in Redis 8 (TestBloomCategories), and, when
// REDISBLOOM_SO names the module's file, against redis-server with the module loaded for the
// key permissions of users with +@all (TestBloomKeyPermissions).
//
// The client tests log in with redis-cli (--user/--pass, -a), go-redis (Username, RESP2 and
// RESP3 through HELLO) and redis-py (username) on both servers and compare what each client
// shows, and TestExporterUser scrapes Redis and bloomd with prometheus-redis-exporter as a user
// limited to what the exporter runs.
//
// Tests that need a program that is not installed skip with a message, unless the environment
// variable that CI sets for it (BLOOM_REQUIRE_REDIS, BLOOM_REQUIRE_EXPORTER) is 1.
package aclcompat
