if redis.call('exists', KEYS[1]) == 0 then assert(false, 'Bloom filter is not initialized')end; return redis.call('hget', KEYS[1], ARGV[1]);
