package rdb

import "flag"

// record makes TestRecordTestdata rewrite testdata/ from the real programs.
var record = flag.Bool("record", false, "re-record testdata/ from redis-server and RedisBloom (needs REDISBLOOM_SO)")
