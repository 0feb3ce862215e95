local r = redis.call('renamenx', KEYS[1], ARGV[1]); if r == 0 then   return 0; else    return redis.call('renamenx', KEYS[2], ARGV[2]); end; 
