// Combos as instruments (issue 34, first slice): create_combo names a set of legs (Deribit's names
// for spreads and straddles), returns the existing combo for the same legs in any order or scale, and
// a combo ends with the expiry of a leg; over HTTP the four methods answer Deribit's shapes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isReject } from '../../src/domain/errors.ts';
import type { ComboRecord } from '../../src/combos/combos.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { EXP_JAN, EXP_MAR, Harness, spec } from '../helpers/engine.ts';
import { atmCall, twinPut, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

const C100 = spec('BTC', EXP_MAR, 100000, 'call');
const C110 = spec('BTC', EXP_MAR, 110000, 'call');
const P100 = spec('BTC', EXP_MAR, 100000, 'put');
const J100 = spec('BTC', EXP_JAN, 100000, 'call');

describe('combos in the engine', () => {
  it('names spreads and straddles, finds a combo again by its legs and ends it with a leg\'s expiry', () => {
    const h = Harness.market([C100, C110, P100, J100]);
    const u = h.user('1');
    const make = (legs: [string, number][]) => h.apply({ t: 'create_combo', userId: u, legs: legs.map(([instrument, ratio]) => ({ instrument, ratio })) }) as ComboRecord;
    const cs = make([[C100.name, 1], [C110.name, -1]]);
    assert.equal(cs.id, 'BTC-CS-27MAR26-100000_110000');
    assert.deepEqual(cs.legs, [{ instrument: C100.name, ratio: 1 }, { instrument: C110.name, ratio: -1 }]);
    // the same legs in another order or scale: the same combo, no new instrument id
    const next = h.ex.nextInstrumentId;
    assert.equal(make([[C110.name, -2], [C100.name, 2]]).id, cs.id);
    assert.equal(h.ex.nextInstrumentId, next);
    assert.equal(make([[C100.name, 1], [P100.name, 1]]).id, 'BTC-STRD-27MAR26-100000');
    const cal = make([[J100.name, -1], [C100.name, 2]]);
    assert.equal(cal.id, `BTC-COMBO-${cal.instrumentId}`);
    assert.ok(isReject(h.apply({ t: 'create_combo', userId: u, legs: [{ instrument: C100.name, ratio: 1 }] })));
    assert.ok(isReject(h.apply({ t: 'create_combo', userId: u, legs: [{ instrument: C100.name, ratio: 1 }, { instrument: 'BTC-1JAN20-1-C', ratio: 1 }] })));
    assert.ok(h.ex.combos.isActive(cal));
    h.apply({ t: 'index', currency: 'BTC', price: 100_000, manual: true, by: null }, EXP_JAN + 1);
    assert.equal(h.ex.combos.isActive(cal), false, 'the expiry of a leg ends the combo');
    assert.ok(h.ex.combos.isActive(cs));
    assert.equal(stateHash(restore(serialize(h.ex))), stateHash(h.ex));
    assert.equal(restore(serialize(h.ex)).combos.byId.size, 3);
  });
});

describe('combos over HTTP', () => {
  let server: TestServer;
  let user: string;
  let call: Market;
  let put: Market;

  before(async () => {
    server = await startServer();
    const admin = await adminToken(server.url);
    user = await userToken(server.url, admin, 'combo@example.com');
    call = await atmCall(server.url);
    put = await twinPut(server.url, call);
  });

  after(async () => {
    await server?.stop();
  });

  it('creates a straddle once and lists it by id, currency and state', async () => {
    const trades = [{ instrument_name: call.name, direction: 'buy', amount: 1 }, { instrument_name: put.name, direction: 'buy', amount: 1 }];
    const c = await ok(server.url, 'private/create_combo', { trades }, user);
    assert.match(c.id, /^BTC-STRD-/);
    assert.equal(c.state, 'active');
    assert.deepEqual(c.legs.map((l: any) => l.amount), [1, 1]);
    assert.deepEqual(await ok(server.url, 'private/create_combo', { trades: [...trades].reverse() }, user), c);
    assert.deepEqual(await ok(server.url, 'public/get_combo_details', { combo_id: c.id }), c);
    assert.deepEqual(await ok(server.url, 'public/get_combo_ids', { currency: 'BTC', state: 'active' }), [c.id]);
    assert.deepEqual(await ok(server.url, 'public/get_combo_ids', { currency: 'ETH' }), []);
    assert.deepEqual(await ok(server.url, 'public/get_combos', { currency: 'any' }), [c]);
    assert.equal((await rpc(server.url, 'public/get_combo_details', { combo_id: 'BTC-NOPE' })).body.error?.code, 10020);
  });
});
