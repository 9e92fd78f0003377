// get_exercisable_options past expiry (API.md 3.4): a long in-the-money option whose expiry has passed
// but which is not settled yet shows `state:"expired"`, valued at its delivery price once fixed (at
// the index until then). Driven through the real handler on an engine-level harness.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Services } from '../../src/app/services.ts';
import { accountMethods } from '../../src/api/methods/account.ts';
import type { CallContext } from '../../src/api/rpc/registry.ts';
import { Harness, spec } from '../helpers/engine.ts';

const DAILY = Date.UTC(2026, 0, 6, 8);
const ITM = spec('BTC', DAILY, 90000, 'call');
const OTM = spec('BTC', DAILY, 90000, 'put');

function exercisable(h: Harness, userId: number): Promise<any[]> {
  const def = accountMethods.find((m) => m.name === 'public/get_exercisable_options')!;
  const services = { ex: h.ex, seq: { read: <R>(fn: () => R) => Promise.resolve(fn()) } } as unknown as Services;
  const ctx: CallContext = { services, caller: { userId, role: 'user', scopes: new Set(['trade:read']), tokenHash: null }, ip: '127.0.0.1' };
  return Promise.resolve(def.handler(ctx, { currency: 'any' } as never)) as Promise<any[]>;
}

describe('exercisable options past expiry', () => {
  it('lists an expired in-the-money long as expired, valued at the delivery price once fixed and at the index before', async () => {
    const h = Harness.market([ITM, OTM]);
    const long = h.user('10');
    const short = h.user('10');
    const price = (name: string) => (h.ex.markets.get(h.inst(name).id)!.maxPrice / 1e4).toFixed(4);
    h.ok(short, 'sell', ITM.name, price(ITM.name), '0.5');
    h.ok(long, 'buy', ITM.name, price(ITM.name), '0.5');
    h.ok(short, 'sell', OTM.name, price(OTM.name), '0.5');
    h.ok(long, 'buy', OTM.name, price(OTM.name), '0.5');

    const open = await exercisable(h, long);
    assert.deepEqual(open.map((r) => [r.instrument_name, r.state, r.intrinsic_value]), [[ITM.name, 'open', 0.1]]);
    assert.equal(open[0].total_value, 0.05);
    assert.deepEqual(await exercisable(h, short), []);

    // the clock passes the expiry (a later command), settlement has not run yet
    h.apply({ t: 'deposit', userId: short, currency: 'BTC', amount: 1, depositId: null, by: short }, DAILY + 1000);
    const expired = await exercisable(h, long);
    assert.equal(expired[0].state, 'expired');
    assert.equal(expired[0].underlying_price, 100000);
    h.inst(ITM.name).deliveryPrice = 120000;
    const delivered = await exercisable(h, long);
    assert.equal(delivered[0].underlying_price, 120000);
    assert.equal(delivered[0].intrinsic_value, 0.25);
    assert.equal(delivered[0].total_value, 0.125);
  });
});
