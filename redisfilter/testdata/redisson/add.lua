local size = redis.call('hget', KEYS[1], 'size');
local hashIterations = redis.call('hget', KEYS[1], 'hashIterations');
assert(size == ARGV[1] and hashIterations == ARGV[2], 'Bloom filter config has been changed')
local k = 0; local c = 0;
for i = 4, #ARGV, 1 do
  local r = redis.call('setbit', KEYS[2], ARGV[i], 1);
  if r == 0 then k = k + 1; end;
  if ((i - 4) + 1) % ARGV[3] == 0 then if k > 0 then c = c + 1; end; k = 0; end;
end;
return c;
