// A delivery debit must not leave cash that open buys were accepted against promised twice: bids
// rest on the promise that their premium is in cash (docs/api-notes.md "Cash rules"), and a fill of
// a resting bid pays without a further check. Found by the conservation property once mass quotes
// joined its stream: a short expired in the money, the delivery took the cash the account's resting
// bid held, and the bid's fill then ran the balance below zero.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import type { PlaceResult } from '../../src/engine/trading.ts';
import { EXP_JAN, EXP_MAR, Harness, spec } from '../helpers/engine.ts';

const SHORT = spec('BTC', EXP_JAN, 100_000, 'call');
const BID = spec('BTC', EXP_MAR, 100_000, 'call');

/** A price on the 0.0005 grid at the instrument's mark (text, as the harness takes it). */
function atMark(h: Harness, name: string): string {
  return ((Math.round(h.ex.markets.get(h.inst(name).id)!.markCoin * 2000) * 5) / 1e4).toFixed(4);
}

describe('settlement and the cash open buys promise', () => {
  it('cancels the newest open buys whose promised cash a delivery took, so that no later fill runs the balance negative', () => {
    const h = Harness.market([SHORT, BID]);
    const a = h.user('1');
    const b = h.user('10');
    const c = h.user('10');
    const sp = atMark(h, SHORT.name);
    h.ok(a, 'sell', SHORT.name, sp, '1');
    h.ok(b, 'buy', SHORT.name, sp, '1');
    // two bids that together hold most of the account's cash
    const bp = atMark(h, BID.name);
    const older = h.ok(a, 'buy', BID.name, bp, '3');
    const newer = h.ok(a, 'buy', BID.name, bp, '3');
    assert.equal(older.order.state, 'open');
    assert.equal(newer.order.state, 'open');
    // the index ends far above the strike: the short call delivers 0.5 BTC
    h.apply({ t: 'index', currency: 'BTC', price: 200_000, manual: true, by: null }, EXP_JAN - 40 * 60_000);
    h.apply({ t: 'settle', currency: 'BTC', expiry: EXP_JAN }, EXP_JAN + 1_000);
    const free = h.ex.trading.risk.freeCash(h.u(a), 'BTC');
    assert.ok(free >= 0, `cash promised to open buys beyond the balance: free cash ${free}`);
    assert.equal(newer.order.state, 'cancelled', 'the newest bid goes first');
    assert.equal(newer.order.cancelReason, 'risk_mitigation');
    assert.equal(older.order.state, 'open', 'what the cash still covers stays');
    // a seller hitting every bid left cannot take the account below zero
    // (a market sell: the index move put the bids' price below the band a new limit order meets)
    const r = h.place(c, 'sell', BID.name, null, '10', { type: 'market', tif: 'immediate_or_cancel' });
    assert.ok(!isReject(r), JSON.stringify(r));
    assert.equal((r as PlaceResult).trades.length, 1);
    assert.ok(h.balance(a) >= 0, `balance ${h.balance(a)}`);
  });
});
