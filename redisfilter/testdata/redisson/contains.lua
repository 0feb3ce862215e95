local size = redis.call('hget', KEYS[1], 'size');
local hashIterations = redis.call('hget', KEYS[1], 'hashIterations');
if size ~= ARGV[1] or hashIterations ~= ARGV[2] then return 0; end;
local cc = (#ARGV - 3) / ARGV[3];
local missing = 0; local zero = 0;
for i = 4, #ARGV, 1 do
  if redis.call('getbit', KEYS[2], ARGV[i]) == 0 then zero = 1; end;
  if ((i - 4) + 1) % cc == 0 then missing = missing + zero; zero = 0; end;
end;
return ARGV[3] - missing;
