// Self-trade prevention (src/engine/selfTrade.ts, issue 31 set_self_trading_config): `reject_taker`
// (the default) refuses an order that would meet the account's own resting order; `cancel_maker`
// cancels the account's own resting orders the order would meet, and it goes on to trade with
// others. The setting is state: in the snapshot and the state hash.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import type { Command } from '../../src/engine/commands.ts';
import type { TriggerPlaceResult } from '../../src/engine/triggers.ts';
import type { MassQuoteResult } from '../../src/engine/massQuote.ts';
import { tradeIdsOf } from '../../src/engine/types.ts';
import { EXP_MAR, Harness, amt, code, px, spec } from '../helpers/engine.ts';

const CALL = spec('BTC', EXP_MAR, 100_000, 'call');

function market(): { h: Harness; a: number; b: number; p: string; lo: string } {
  const h = Harness.market([CALL]);
  const a = h.user('10');
  const b = h.user('10');
  const m = h.ex.markets.get(h.inst(CALL.name).id)!;
  const units = Math.floor((m.minPrice + 0.5 * (m.maxPrice - m.minPrice)) / 5) * 5;
  const low = Math.floor((m.minPrice + 0.3 * (m.maxPrice - m.minPrice)) / 5) * 5;
  return { h, a, b, p: (units / 1e4).toFixed(4), lo: (low / 1e4).toFixed(4) };
}

describe('self-trade prevention', () => {
  it('reject_taker (the default) refuses an order that would meet the account\'s own order', () => {
    const { h, a, p } = market();
    h.ok(a, 'sell', CALL.name, p, '0.1');
    const r = h.place(a, 'buy', CALL.name, p, '0.1');
    assert.equal(code(r), 11030);
    assert.equal(h.openOrders(a).length, 1, 'the resting order stays');
  });

  it('cancel_maker cancels the own orders the order would meet, and the order trades with the others', () => {
    const { h, a, b, p } = market();
    assert.equal(h.apply({ t: 'set_self_trading_config', userId: a, mode: 'cancel_maker', extendedToSubaccounts: false }), 'ok');
    const own = h.ok(a, 'sell', CALL.name, p, '0.1').order;
    const other = h.ok(b, 'sell', CALL.name, p, '0.3').order;
    const r = h.ok(a, 'buy', CALL.name, p, '0.2');
    assert.equal(own.state, 'cancelled');
    assert.equal(own.cancelReason, 'self_trade_prevention');
    assert.equal(r.trades.length, 1);
    assert.equal(r.trades[0]!.makerOrder.id, other.id);
    assert.equal(r.order.state, 'filled');
    assert.equal(h.position(a, CALL.name).size, h.position(b, CALL.name).size * -1);
    assert.equal(h.position(b, CALL.name).size * -1, r.order.filled);
  });

  it('cancel_maker leaves the own orders the order would not reach, and a post-only order cancels nothing', () => {
    const { h, a, b, p } = market();
    h.apply({ t: 'set_self_trading_config', userId: a, mode: 'cancel_maker', extendedToSubaccounts: false });
    const theirs = h.ok(b, 'sell', CALL.name, p, '0.2').order;
    const own = h.ok(a, 'sell', CALL.name, p, '0.1').order;
    // 0.2 of b's come first at the price: a buy of 0.2 never reaches a's own order
    h.ok(a, 'buy', CALL.name, p, '0.2');
    assert.equal(theirs.state, 'filled');
    assert.equal(own.state, 'open');
    const po = h.place(a, 'buy', CALL.name, p, '0.1', { postOnly: true });
    assert.ok(!isReject(po));
    assert.equal(own.state, 'open', 'post-only never takes, so it cancels nothing');
  });

  it('the setting survives a snapshot and is in the state hash; back to reject_taker refuses again', () => {
    const { h, a, p } = market();
    const before = stateHash(h.ex);
    h.apply({ t: 'set_self_trading_config', userId: a, mode: 'cancel_maker', extendedToSubaccounts: true });
    assert.notEqual(stateHash(h.ex), before);
    const restored = restore(serialize(h.ex));
    assert.equal(stateHash(restored), stateHash(h.ex));
    assert.deepEqual(restored.selfTrading.get(a), { mode: 'cancel_maker', extendedToSubaccounts: true });
    h.apply({ t: 'set_self_trading_config', userId: a, mode: 'reject_taker', extendedToSubaccounts: false });
    h.ok(a, 'sell', CALL.name, p, '0.1');
    assert.equal(code(h.place(a, 'buy', CALL.name, p, '0.1')), 11030);
  });
});

describe('self-trade prevention on edit', () => {
  it('cancel_maker: an edit that moves an order onto the account\'s own order cancels that order first', () => {
    const { h, a, p, lo } = market();
    h.apply({ t: 'set_self_trading_config', userId: a, mode: 'cancel_maker', extendedToSubaccounts: false });
    const own = h.ok(a, 'sell', CALL.name, p, '0.1').order;
    const bid = h.ok(a, 'buy', CALL.name, lo, '0.1').order;
    const r = h.apply({ t: 'edit', userId: a, orderId: bid.id, lots: 0.1 * 1e8, price: own.price, postOnly: null, rejectPostOnly: null });
    assert.ok(!isReject(r), isReject(r) ? `${r.code} ${r.reason}` : '');
    assert.equal(own.state, 'cancelled');
    assert.equal(own.cancelReason, 'self_trade_prevention');
    assert.equal(bid.state, 'open');
  });
});

describe('self-trade prevention of a trigger order as it fires', () => {
    /** a's own bid rests ahead of b's at 0.08; a's index stop sell of 1 at 0.08 fires at 95,000 */
    function armed(mode: 'reject_taker' | 'cancel_maker') {
      const h = Harness.market([CALL]);
      const [a, b] = [h.user('10'), h.user('10')];
      h.apply({ t: 'set_self_trading_config', userId: a, mode, extendedToSubaccounts: false });
      const own = h.ok(a, 'buy', CALL.name, '0.08', '0.5').order;
      const theirs = h.ok(b, 'buy', CALL.name, '0.08', '2').order;
      const cmd: Command = {
        t: 'place', userId: a, side: 1, instrument: CALL.name, price: px('0.08'), advanced: null, advPrice: null, lots: amt('1'), type: 'limit', tif: 'good_til_cancelled',
        postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null, trig: { type: 'stop_limit', source: 'index_price', price: px('95000'), offset: null },
      };
      const r = h.apply(cmd) as TriggerPlaceResult;
      assert.ok(!isReject(r), JSON.stringify(r));
      assert.equal(r.order.state, 'untriggered');
      h.apply({ t: 'index', currency: 'BTC', price: 95_000, manual: true, by: null });
      return { h, a, b, own, theirs, t: r.order };
    }

    it('reject_taker refuses the order a trigger places when it would meet the account\'s own order; nothing trades', () => {
      const { h, a, own, t } = armed('reject_taker');
      assert.equal(t.state, 'rejected');
      assert.equal(t.rejectReason, 'self_trade');
      assert.equal(own.state, 'open', 'the own bid stays');
      assert.equal(h.position(a, CALL.name)?.size ?? 0, 0, 'a never traded with itself');
    });

    it('cancel_maker cancels the own resting orders the fired order would meet, and it trades with the others', () => {
      const { h, a, b, own, theirs, t } = armed('cancel_maker');
      assert.equal(t.state, 'triggered', `${t.state} ${t.rejectReason ?? ''}`);
      assert.equal(own.state, 'cancelled');
      assert.equal(own.cancelReason, 'self_trade_prevention');
      const fired = h.u(a).orders.get(t.firedOrderId!)!;
      assert.equal(fired.state, 'filled');
      for (const id of tradeIdsOf(fired)) assert.notEqual(h.ex.recentTrades.find((x) => x.id === id)!.makerOrder.userId, a, 'no trade of a with itself');
      assert.equal(theirs.filled, fired.filled);
      assert.equal(h.position(a, CALL.name).size, -h.position(b, CALL.name).size);
    });
  });

describe('self-trade prevention of a mass quote', () => {
  function quoting(mode: 'reject_taker' | 'cancel_maker') {
    const { h, a, b, p } = market();
    h.apply({ t: 'set_self_trading_config', userId: a, mode, extendedToSubaccounts: false });
    const cfg = h.apply({ t: 'set_mmp_config', userId: a, indexName: 'btc_usd', group: 'g1', interval: 60, frozenTime: 10, quantityLimit: amt('10'), deltaLimit: 0, maxQuoteQuantity: 0 });
    assert.ok(!isReject(cfg), JSON.stringify(cfg));
    // the account's own ask rests first at the price, another account's behind it
    const own = h.ok(a, 'sell', CALL.name, p, '0.1').order;
    const theirs = h.ok(b, 'sell', CALL.name, p, '0.3').order;
    const bid = { price: px(p), lots: amt('0.2'), postOnly: false, rejectPostOnly: false };
    const r = h.apply({ t: 'mass_quote', userId: a, quoteId: 'q', group: 'g1', quotes: [{ instrument: CALL.name, quoteSetId: null, bid, ask: null }] }) as MassQuoteResult;
    assert.ok(!isReject(r), isReject(r) ? JSON.stringify(r) : '');
    return { h, a, b, own, theirs, r };
  }

  it('reject_taker refuses a quote that would meet the account\'s own order; nothing trades', () => {
    const { h, a, own, r } = quoting('reject_taker');
    assert.equal(r.errors.length, 1);
    assert.equal(r.errors[0]!.error.code, 11030);
    assert.equal(r.trades.length, 0);
    assert.equal(own.state, 'open');
    assert.equal(h.position(a, CALL.name)?.size ?? 0, 0);
  });

  it('cancel_maker cancels the own order the quote would meet, and the quote trades with the others', () => {
    const { h, a, b, own, theirs, r } = quoting('cancel_maker');
    assert.equal(r.errors.length, 0, JSON.stringify(r.errors));
    assert.equal(own.state, 'cancelled');
    assert.equal(own.cancelReason, 'self_trade_prevention');
    assert.equal(r.trades.length, 1);
    assert.equal(r.trades[0]!.makerOrder.id, theirs.id);
    for (const t of r.trades) assert.notEqual(t.makerOrder.userId, a, 'no trade of a with itself');
    assert.equal(h.position(a, CALL.name).size, -h.position(b, CALL.name).size);
    assert.ok(h.position(a, CALL.name).size > 0);
  });
});
