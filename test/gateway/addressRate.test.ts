// The frames a gateway reads per client address (src/gateway/addressRate.ts): an address past its
// rate waits in its own socket buffers (nothing refused, nothing lost), and another address is read
// meanwhile.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { startGateway } from '../../src/gateway/gateway.ts';
import { AddressRate } from '../../src/gateway/addressRate.ts';
import { startServer } from '../helpers/server.ts';
import { freshStream } from '../helpers/nats.ts';
import { AddressedClient, until } from '../helpers/gateway.ts';

test('an address bucket allows a burst of twice the rate, then one frame per 1/rate s', () => {
  const r = new AddressRate(10);
  for (let i = 0; i < 20; i++) assert.equal(r.take('a', 0), 0, `frame ${i} of the burst`);
  assert.equal(r.take('a', 0), 100, 'the 21st waits 100 ms');
  assert.equal(r.take('b', 0), 0, 'another address has its own bucket');
  assert.equal(r.take('a', 200), 0, 'refilled by 2 frames after 200 ms, one used');
  r.sweep(10_000);
  assert.equal(r.take('a', 10_000), 0);
});

test('a gateway reads one address no faster than its frame rate, answers every frame, and reads another address meanwhile', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer(ns.env);
  t.after(() => srv.stop());
  const gw = await startGateway({ leaderUrl: srv.url, natsUrl: ns.url, stream: ns.stream, prefix: ns.prefix, port: 0, host: '127.0.0.1', log: pino({ level: 'silent' }), framesPerSecPerIp: 20 });
  t.after(() => gw.close());
  const flood = await AddressedClient.open(gw.url, '127.0.0.1');
  const other = await AddressedClient.open(gw.url, '127.0.0.2');
  t.after(() => [flood, other].forEach((c) => c.ws.terminate()));
  const started = performance.now();
  const answers: any[] = [];
  const all = Array.from({ length: 90 }, () => flood.call('public/get_time', {}, 60_000).then((a) => answers.push(a)));
  await until('the burst answered', () => answers.length >= 40, 20_000);
  const mine = await other.call('public/get_time', {}, 10_000);
  assert.equal(typeof mine.result, 'number');
  const elapsed = (performance.now() - started) / 1000;
  // a bucket of 40 refilled at 20/s: never more answered than that (+1 for the frame that paused)
  assert.ok(answers.length <= 40 + Math.ceil(20 * elapsed) + 1, `${answers.length} answered in ${elapsed.toFixed(2)} s`);
  assert.ok(answers.length < 90, 'the other address was read while this one waited');
  await Promise.all(all);
  assert.deepEqual(answers.filter((a) => typeof a.result !== 'number'), [], 'every frame answered, none refused');
});
