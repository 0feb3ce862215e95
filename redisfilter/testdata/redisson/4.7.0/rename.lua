local newKeysIndex = #KEYS/2; for j = 1, newKeysIndex, 1 do if redis.call('exists', KEYS[j]) == 1 then redis.call('rename', KEYS[j], KEYS[newKeysIndex + j]); end; end; 
