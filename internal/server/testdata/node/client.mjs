// Drives bloomd with node-redis (the redis package, which bundles @redis/bloom), as a Node.js
// service would: the cf and bf command groups, in RESP2 and RESP3.
//
// Usage: node client.mjs PORT [PASSWORD]. Exits 0 and prints "ok" when every check passes.
import assert from 'node:assert/strict';
import { createClient, RESP_TYPES } from 'redis';

const port = Number(process.argv[2]);
const password = process.argv[3];

// rejects asserts that promise p fails with a server error whose message is want.
async function rejects(p, want) {
  await assert.rejects(p, (err) => {
    assert.equal(err.message, want);
    return true;
  });
}

// dumpAndLoad copies key to copy through SCANDUMP and LOADCHUNK, with the chunks as Buffers so
// that binary data survives.
async function dumpAndLoad(raw, group, key, copy) {
  const chunks = [];
  for (let it = 0; ;) {
    const { iterator, chunk } = await raw[group].scanDump(key, it);
    if (iterator === 0) break;
    assert.ok(Buffer.isBuffer(chunk));
    chunks.push([iterator, chunk]);
    it = iterator;
  }
  assert.ok(chunks.length >= 2, `${key}: ${chunks.length} chunks`);
  for (const [it, chunk] of chunks) {
    assert.equal(await raw[group].loadChunk(copy, it, chunk), 'OK');
  }
}

// plain returns a CF.INFO or BF.INFO reply as a plain object, whichever reply shape the protocol gives.
function plain(reply) {
  return reply instanceof Map ? Object.fromEntries(reply) : { ...reply };
}

async function checkCF(client, raw, p, RESP) {
  const k = `${p}coupons`;
  assert.equal(await client.cf.reserve(k, 1000, { BUCKETSIZE: 4, MAXITERATIONS: 10, EXPANSION: 2 }), 'OK');
  await rejects(client.cf.reserve(k, 1000), 'ERR item exists');
  assert.equal(await client.cf.add(k, 'c1'), true);
  assert.equal(await client.cf.addNX(k, 'c1'), false);
  assert.equal(await client.cf.addNX(k, 'c2'), true);
  assert.deepEqual(await client.cf.insert(k, ['c3', 'c3']), [true, true]);
  // CF.INSERTNX answers integers (-1 for a full filter) even in RESP3, where CF.INSERT answers
  // booleans; node-redis turns RESP2's integers into booleans and passes RESP3's replies through.
  const nx = RESP === 2 ? [true, false, true] : [1, 0, 1];
  assert.deepEqual(await client.cf.insertNX(`${p}fresh`, ['a', 'a', 'b'], { CAPACITY: 100 }), nx);
  await rejects(client.cf.insert(`${p}absent`, ['x'], { NOCREATE: true }), 'ERR not found');
  assert.equal(await client.cf.count(k, 'c3'), 2);
  assert.equal(await client.cf.exists(k, 'c1'), true);
  assert.equal(await client.cf.exists(k, 'nope'), false);
  // @redis/bloom has no mExists for cuckoo filters; send CF.MEXISTS as it is (no reply transform).
  assert.deepEqual(await client.sendCommand(['CF.MEXISTS', k, 'c1', 'nope', 'c2']), RESP === 2 ? [1, 0, 1] : [true, false, true]);
  assert.equal(await client.cf.del(k, 'c1'), true);
  assert.equal(await client.cf.del(k, 'c1'), false);
  assert.equal(await client.cf.exists(k, 'c1'), false);
  await rejects(client.cf.del(`${p}absent`, 'x'), 'Not found');

  assert.deepEqual(plain(await client.cf.info(k)), {
    'Size': 1080,
    'Number of buckets': 256,
    'Number of filters': 1,
    'Number of items inserted': 3,
    'Number of items deleted': 1,
    'Bucket size': 4,
    'Expansion rate': 2,
    'Max iterations': 10,
  });

  for (let i = 0; i < 300; i++) await client.cf.add(k, `item-${i}`);
  await dumpAndLoad(raw, 'cf', k, `${k}-copy`);
  for (let i = 0; i < 300; i++) assert.equal(await client.cf.exists(`${k}-copy`, `item-${i}`), true, `item-${i}`);
  assert.equal(await client.cf.count(`${k}-copy`, 'c3'), 2);
  assert.deepEqual(plain(await client.cf.info(`${k}-copy`)), plain(await client.cf.info(k)));
  assert.equal(await client.type(k), 'MBbloomCF');

  await client.set(`${p}marker`, 'v');
  await assert.rejects(client.cf.add(`${p}marker`, 'x'), (err) => err.message.startsWith('WRONGTYPE'));
}

async function checkBF(client, raw, p) {
  const k = `${p}emails`;
  assert.equal(await client.bf.reserve(k, 0.01, 1000), 'OK');
  await rejects(client.bf.reserve(k, 0.01, 1000), 'ERR item exists');
  assert.equal(await client.bf.add(k, 'alice@example.com'), true);
  assert.equal(await client.bf.add(k, 'alice@example.com'), false);
  assert.deepEqual(await client.bf.mAdd(k, ['bob@example.com', 'carol@example.com', 'alice@example.com']), [true, true, false]);
  assert.equal(await client.bf.exists(k, 'bob@example.com'), true);
  assert.equal(await client.bf.exists(k, 'mallory@example.com'), false);
  assert.deepEqual(await client.bf.mExists(k, ['alice@example.com', 'nobody']), [true, false]);
  assert.equal(await client.bf.card(k), 3);
  assert.deepEqual(plain(await client.bf.info(k)), {
    'Capacity': 1000,
    'Size': 1480,
    'Number of filters': 1,
    'Number of items inserted': 3,
    'Expansion rate': 2,
  });
  assert.deepEqual(await client.bf.insert(`${p}daily`, ['x', 'y', 'x'], { CAPACITY: 10, ERROR: 0.001, EXPANSION: 3 }), [true, true, false]);
  await rejects(client.bf.insert(`${p}absent`, ['x'], { NOCREATE: true }), 'ERR not found');
  for (let i = 0; i < 200; i++) await client.bf.add(`${p}daily`, `item-${i}`);
  await dumpAndLoad(raw, 'bf', `${p}daily`, `${p}daily-copy`);
  for (let i = 0; i < 250; i++) {
    assert.equal(await client.bf.exists(`${p}daily-copy`, `item-${i}`), await client.bf.exists(`${p}daily`, `item-${i}`), `item-${i}`);
  }
  assert.equal(await client.bf.card(`${p}daily-copy`), await client.bf.card(`${p}daily`));
  assert.equal(await client.type(k), 'MBbloom--');
}

for (const RESP of [2, 3]) {
  const client = createClient({ socket: { host: '127.0.0.1', port, connectTimeout: 10000 }, password, RESP });
  client.on('error', (err) => { console.error(err); process.exitCode = 1; });
  await client.connect();
  // Dumps are binary: read bulk strings as Buffers on this view of the connection.
  const raw = client.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  assert.equal(await client.ping(), 'PONG');
  const prefix = `resp${RESP}:`;
  await checkCF(client, raw, prefix, RESP);
  await checkBF(client, raw, prefix);
  await client.close();
}
console.log('ok');
