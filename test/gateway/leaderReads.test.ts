// A gateway's reads of the leader's combos (issue 34, src/gateway/leaderReads.ts refreshCombos): a
// client may subscribe to a combo it has just made before the stream names it, so the gateway asks
// the leader again. Adversarial: a call made while a read is running must wait for a read started
// after it (a naive version handing back the running read misses a combo made meanwhile), and calls
// made meanwhile share that one read (a flood of unknown names costs one read per round, not one
// each). A fake leader answers get_combo_ids and holds each answer until the test releases it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { LeaderReads } from '../../src/gateway/leaderReads.ts';
import type { LeaderLocator } from '../../src/gateway/leaderLocator.ts';

test('refreshCombos: a call during a read waits for the next read, and the calls meanwhile share it', async (t) => {
  const combos: Record<string, string[]> = { BTC: ['BTC-CS-27DEC26-100000_110000'], ETH: [] };
  const asked: string[] = [];
  const held: Array<() => void> = [];
  let arrived: (() => void) | null = null;
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    assert.equal(url.pathname, '/api/v2/public/get_combo_ids');
    const currency = url.searchParams.get('currency')!;
    asked.push(currency);
    // the answer is what the leader had when it read (sent when the test releases it)
    const result = [...combos[currency]!];
    held.push(() => res.end(JSON.stringify({ jsonrpc: '2.0', result })));
    arrived?.();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const leader = { settled: async () => base, relocate: async () => base } as unknown as LeaderLocator;
  const reads = new LeaderReads(leader, 5000);
  /** Waits for the leader to have `n` requests, then answers the first one held. */
  const answerNext = async (n: number) => {
    while (asked.length < n) await new Promise<void>((r) => (arrived = r));
    held.shift()!();
  };

  const first = reads.refreshCombos();
  await new Promise<void>((r) => (arrived = r));
  assert.deepEqual(asked, ['BTC'], 'the first read is running');
  // a combo made now, after the running read asked for BTC: only a later read can see it
  combos.BTC = [...combos.BTC!, 'BTC-COMBO-77'];
  const second = reads.refreshCombos();
  const third = reads.refreshCombos();
  assert.equal(second, third, 'calls made during a read share the next one');
  assert.notEqual(second, first, 'and it is not the running one');
  held.shift()!();
  await answerNext(2);
  await first;
  assert.equal(reads.combos.has('BTC-COMBO-77'), false, 'the first read answered before the combo was made');
  await answerNext(3);
  await answerNext(4);
  await second;
  assert.ok(reads.combos.has('BTC-COMBO-77'), 'the call made during the first read sees the combo');
  assert.deepEqual(asked, ['BTC', 'ETH', 'BTC', 'ETH'], 'two reads in all for three calls');
  assert.equal(reads.ticks.get('BTC-COMBO-77'), 0.0001, "a combo's tick, for grouped books");
});
