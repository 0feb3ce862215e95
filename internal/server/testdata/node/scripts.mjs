// Runs the Spring example's Bloom filter scripts through node-redis, as a Node.js service
// would: the filter's name in KEYS[1], the item in KEYS[2], the reply read as a boolean.
// defineScript sends EVALSHA and falls back to EVAL when the server does not know the script.
//
// Usage: node scripts.mjs PORT [PASSWORD [USER]]. Prints "ok" when every check passes.
import assert from 'node:assert/strict';
import { createClient, defineScript } from 'redis';

const port = Number(process.argv[2]);
const password = process.argv[3];
const username = process.argv[4] || undefined;

const ADD = "return redis.call('BF.ADD', KEYS[1], KEYS[2])";
const EXISTS = "return redis.call('BF.EXISTS', KEYS[1], KEYS[2])";
const script = (SCRIPT) => defineScript({
  SCRIPT,
  NUMBER_OF_KEYS: 2,
  parseCommand(parser, filter, item) { parser.pushKey(filter); parser.pushKey(item); },
  transformReply: (reply) => reply === 1,
});

for (const RESP of [2, 3]) {
  const client = createClient({
    socket: { host: '127.0.0.1', port, connectTimeout: 10000 }, username, password, RESP,
    scripts: { bfAdd: script(ADD), bfExists: script(EXISTS) },
  });
  client.on('error', (err) => { console.error(err); process.exitCode = 1; });
  await client.connect();
  const f = `node:filter:${RESP}`;
  assert.equal(await client.bfAdd(f, 'alice'), true);
  assert.equal(await client.bfAdd(f, 'alice'), false);
  assert.equal(await client.bfExists(f, 'alice'), true);
  assert.equal(await client.bfExists(f, 'mallory'), false);
  assert.equal(await client.eval(ADD, { keys: [f, 'bob'] }), 1);
  if (username) {
    await assert.rejects(client.eval("return redis.call('SET', KEYS[1], 'x')", { keys: ['k'] }),
      (err) => err.message.startsWith("ERR The user executing the script can't run this command or subcommand"));
  }
  await client.close();
}
console.log('ok');
