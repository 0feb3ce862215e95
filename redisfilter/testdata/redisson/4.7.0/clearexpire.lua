local result = 0;for j = 1, #KEYS, 1 do local expireSet = redis.call('persist', KEYS[j]); if expireSet == 1 then result = expireSet;end; end; return result; 
