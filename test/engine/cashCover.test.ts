// Review finding pinned: buying below the mark must not let the value of long options fund more
// purchases, or a buyer's balance could run negative without limit and leave with others' money.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERR } from '../../src/domain/errors.ts';
import { EXP_MAR, Harness, code, spec } from '../helpers/engine.ts';

test('buys below the mark are limited by free cash and never drive a balance negative', () => {
  const name = spec('BTC', EXP_MAR, 100000, 'call').name;
  const h = Harness.market([spec('BTC', EXP_MAR, 100000, 'call')]);
  const mark = h.ex.markets.get(h.inst(name).id)!;
  const low = (Math.ceil(mark.minPrice / 5) * 5) / 1e4; // the lowest on-tick price in the band
  const buyer = h.user('0.01');
  const seller = h.user('100');
  let accepted = 0;
  let refused = 0;
  for (let i = 0; i < 50; i++) {
    h.ok(seller, 'sell', name, low.toFixed(4), '0.1');
    const r = h.place(buyer, 'buy', name, low.toFixed(4), '0.1');
    if (code(r) === ERR.NOT_ENOUGH_FUNDS) {
      refused++;
      h.apply({ t: 'cancel_all', userId: seller, currency: null, instrument: null, side: null, label: null });
    } else accepted++;
    assert.ok(h.balance(buyer) >= 0, `buyer balance went negative after ${accepted} buys`);
  }
  // 0.01 BTC pays for only one or two 0.1-lots at the bottom of the band: the rest are refused
  assert.ok(accepted >= 1 && accepted <= 3, `accepted ${accepted}`);
  assert.ok(refused >= 47);
});

test('resting buys share the same cash: two buys cannot each spend it', () => {
  const name = spec('BTC', EXP_MAR, 100000, 'call').name;
  const h = Harness.market([spec('BTC', EXP_MAR, 100000, 'call')]);
  const mark = h.ex.markets.get(h.inst(name).id)!;
  const price = ((Math.ceil(mark.minPrice / 5) * 5) / 1e4).toFixed(4);
  const buyer = h.user('0.01');
  h.ok(buyer, 'buy', name, price, '0.1');
  assert.equal(code(h.place(buyer, 'buy', name, price, '0.1')), ERR.NOT_ENOUGH_FUNDS);
});

test('a user’s trade history stays bounded and a snapshot of it restores to the same state', async () => {
  const { DEFAULT_LIMITS } = await import('../../src/engine/exchange.ts');
  const { restore, serialize, stateHash } = await import('../../src/engine/snapshot.ts');
  const name = spec('BTC', EXP_MAR, 100000, 'call').name;
  const h = Harness.market([spec('BTC', EXP_MAR, 100000, 'call')], { ...DEFAULT_LIMITS, userTradesKept: 5, closedOrdersKept: 5 });
  const price = ((Math.ceil(h.ex.markets.get(h.inst(name).id)!.minPrice / 5) * 5) / 1e4).toFixed(4);
  const a = h.user('100');
  const b = h.user('100');
  for (let i = 0; i < 40; i++) {
    h.ok(a, 'sell', name, price, '0.1');
    h.ok(b, 'buy', name, price, '0.1');
  }
  assert.ok(h.ex.users.get(a)!.trades.length <= 10);
  assert.ok(h.ex.users.get(b)!.trades.length <= 10);
  assert.ok(JSON.parse(serialize(h.ex)).users.every((u: { trades: number[] }) => u.trades.length <= 10));
  assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
});
