if redis.call('exists', KEYS[1]) == 1 then return 0; end;
redis.call('hset', KEYS[1], 'size', ARGV[1]);
redis.call('hset', KEYS[1], 'hashIterations', ARGV[2]);
redis.call('hset', KEYS[1], 'expectedInsertions', ARGV[3]);
redis.call('hset', KEYS[1], 'falseProbability', ARGV[4]);
return 1;
