if redis.call('exists', KEYS[1]) == 1 then redis.call('rename', KEYS[1], ARGV[1]); end; return redis.call('rename', KEYS[2], ARGV[2]); 
