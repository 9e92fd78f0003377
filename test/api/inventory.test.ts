// The operation inventory, generated from the method registry: every operation of the
// authentication, invite and trading groups answers at its canonical path, under the Deribit
// prefixes and at each alias, by GET and by POST (bare params and JSON-RPC), in the Deribit envelope.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { methodGroups } from '../../src/api/methods/index.ts';
import type { MethodDef } from '../../src/api/rpc/registry.ts';
import { assertEnvelope, assertError, assertOk } from '../helpers/envelope.ts';
import { atmCall, cheapCall, type Market } from '../helpers/market.ts';
import { adminToken, login, ok, request, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

const GROUPS = ['authentication', 'invites', 'trading'] as const;
const PREFIXES = ['/v1/', '/api/v2/', '/api/v1/'];
const PW = 'user-password-1';

/** API.md 3.1-3.3: the tables' operations and their Deribit aliases (and `/v1/private/` twins). */
const CONTRACT: Record<string, string[]> = {
  'private/create_admin': [],
  'private/create_user': [],
  'public/auth': ['public/create_token'],
  'private/generate_invite_code': [],
  'public/verify_invite_code': [],
  'private/buy': [],
  'private/sell': [],
  'private/cancel': [],
  'private/cancel_all': [],
  'private/cancel_all_by_currency': [],
  'private/cancel_all_by_instrument': [],
  'private/deposit_collateral': [],
  'public/get_open_orders_by_currency': ['private/get_open_orders_by_currency'],
  'public/get_open_orders_by_instrument': ['private/get_open_orders_by_instrument'],
  'public/get_open_orders_by_side': ['private/get_open_orders_by_side'],
  'public/get_open_orders_instrument_by_currency': ['private/get_open_orders_instrument_by_currency'],
  'public/get_user_trades_by_currency': ['private/get_user_trades_by_currency'],
  'public/get_user_trades_by_currency_and_time': ['private/get_user_trades_by_currency_and_time'],
  'public/get_user_trades_by_instrument': ['private/get_user_trades_by_instrument'],
  'public/get_user_trades_by_instrument_and_time': ['private/get_user_trades_by_instrument_and_time'],
  'public/get_user_trades_by_order': ['private/get_user_trades_by_order'],
};

interface Call {
  params: Record<string, unknown>;
  token?: string;
}

interface Sample {
  /** Reads: every path and transport must give the same result. */
  read?: boolean;
  /** Valid params (and credentials) for one successful call; called afresh for every call. */
  make(): Promise<Call>;
}

const groupMethods: MethodDef[] = GROUPS.flatMap((g) => methodGroups[g]);

describe('operation inventory', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let user: string;
  let atm: Market;
  let cheap: Market;
  let tradedOrder: string;
  let n = 0;
  const fresh = () => `inv${++n}@example.com`;

  before(async () => {
    server = await startServer();
    url = server.url;
    admin = await adminToken(url);
    user = await userToken(url, admin, 'trader@example.com', { currency: 'BTC', amount: 100 });
    const other = await userToken(url, admin, 'other@example.com', { currency: 'BTC', amount: 100 });
    atm = await atmCall(url);
    cheap = await cheapCall(url);
    // one trade, so the user-trade reads have something to return
    const sell = await ok(url, 'private/sell', { instrument_name: cheap.name, amount: 0.2, price: cheap.prices[5] }, user);
    await ok(url, 'private/buy', { instrument_name: cheap.name, amount: 0.2, price: cheap.prices[5] }, other);
    tradedOrder = sell.order.order_id;
    // and one open order, so the open-order reads do too
    await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0] }, user);
  });
  after(() => server.stop());

  const restingSell = async () => (await ok(url, 'private/sell', { instrument_name: atm.name, amount: 0.1, price: atm.prices[atm.prices.length - 1] }, user)).order.order_id;

  const SAMPLES: Record<string, Sample> = {
    'private/create_admin': { make: async () => ({ params: { email: fresh(), password: PW }, token: admin }) },
    'private/create_user': {
      make: async () => ({ params: { email: fresh(), password: PW, invite_code: (await ok(url, 'private/generate_invite_code', {}, admin)).code } }),
    },
    'public/auth': { make: async () => ({ params: { grant_type: 'password', username: 'trader@example.com', password: PW } }) },
    'private/logout': { make: async () => ({ params: {}, token: await login(url, 'trader@example.com', PW) }) },
    'private/generate_invite_code': { make: async () => ({ params: { max_uses: 3, expires_in: 3600, note: 'inventory' }, token: admin }) },
    'public/verify_invite_code': { read: true, make: async () => ({ params: { code: 'inventory-unknown-code' } }) },
    'private/list_invite_codes': { make: async () => ({ params: { count: 5 }, token: admin }) },
    'private/revoke_invite_code': { make: async () => ({ params: { code: (await ok(url, 'private/generate_invite_code', {}, admin)).code }, token: admin }) },
    'private/buy': { make: async () => ({ params: { instrument_name: atm.name, amount: 0.1, price: atm.prices[0] }, token: user }) },
    'private/sell': { make: async () => ({ params: { instrument_name: atm.name, amount: 0.1, price: atm.prices[atm.prices.length - 1] }, token: user }) },
    'private/cancel': { make: async () => ({ params: { order_id: await restingSell() }, token: user }) },
    'private/cancel_all': { make: async () => (await restingSell(), { params: {}, token: user }) },
    'private/cancel_all_by_currency': { make: async () => (await restingSell(), { params: { currency: 'BTC', kind: 'option', type: 'all' }, token: user }) },
    'private/cancel_all_by_instrument': { make: async () => (await restingSell(), { params: { instrument_name: atm.name, type: 'all' }, token: user }) },
    'private/deposit_collateral': { make: async () => ({ params: { currency: 'BTC', amount: 0.5 }, token: user }) },
    'private/withdraw_collateral': { make: async () => ({ params: { currency: 'BTC', amount: 0.01 }, token: user }) },
    'public/get_open_orders_by_currency': { read: true, make: async () => ({ params: { currency: 'BTC' }, token: user }) },
    'public/get_open_orders_by_instrument': { read: true, make: async () => ({ params: { instrument_name: atm.name }, token: user }) },
    'public/get_open_orders_by_side': { read: true, make: async () => ({ params: { side: 'buy', currency: 'BTC' }, token: user }) },
    'public/get_open_orders_instrument_by_currency': { read: true, make: async () => ({ params: { currency: 'BTC' }, token: user }) },
    'public/get_user_trades_by_currency': { read: true, make: async () => ({ params: { currency: 'BTC', count: 5, sorting: 'asc' }, token: user }) },
    'public/get_user_trades_by_currency_and_time': { read: true, make: async () => ({ params: { currency: 'BTC', start_timestamp: 0 }, token: user }) },
    'public/get_user_trades_by_instrument': { read: true, make: async () => ({ params: { instrument_name: cheap.name }, token: user }) },
    'public/get_user_trades_by_instrument_and_time': { read: true, make: async () => ({ params: { instrument_name: cheap.name, start_timestamp: 0 }, token: user }) },
    'public/get_user_trades_by_order': { read: true, make: async () => ({ params: { order_id: tradedOrder }, token: user }) },
  };

  it('registers every operation of API.md 3.1-3.3 with its Deribit aliases', () => {
    const byName = new Map(groupMethods.map((d) => [d.name, d]));
    for (const [name, aliases] of Object.entries(CONTRACT)) {
      const def = byName.get(name);
      assert.ok(def, `${name} is registered`);
      for (const a of aliases) assert.ok(def.aliases?.includes(a), `${name} answers as ${a}`);
    }
  });

  it('has sample params for every operation of the three groups, so none escapes this test', () => {
    const missing = groupMethods.map((d) => d.name).filter((n) => !(n in SAMPLES));
    assert.deepEqual(missing, []);
  });

  for (const def of groupMethods) {
    const names = [def.name, ...(def.aliases ?? [])];
    it(`${def.name} answers at ${names.length * PREFIXES.length} paths by GET, POST and JSON-RPC POST in the Deribit envelope`, async () => {
      const sample = SAMPLES[def.name];
      assert.ok(sample, `sample params for ${def.name}`);
      const results: unknown[] = [];
      for (const prefix of PREFIXES) {
        for (const name of names) {
          const where = `${prefix}${name}`;
          for (const mode of ['GET', 'POST', 'JSON-RPC'] as const) {
            const { params, token } = await sample.make();
            const id = mode === 'JSON-RPC' ? 7 : undefined;
            const r = await rpc(url, name, params, token, { prefix, get: mode === 'GET', ...(mode === 'JSON-RPC' ? { jsonrpc: { id } } : {}) });
            assert.notEqual(r.body?.error?.code, -32601, `${mode} ${where} is routed`);
            assertEnvelope(r, { ...(mode === 'JSON-RPC' ? { id: 7 } : {}), testnet: true, where: `${mode} ${where}` });
            results.push(assertOk(r, `${mode} ${where}`));
          }
        }
      }
      if (sample.read) for (const r of results) assert.deepEqual(r, results[0], 'the same answer at every path and by every transport');
    });
  }

  it('echoes a string JSON-RPC id and answers without an id to a bare POST', async () => {
    const r = await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, user, { jsonrpc: { id: 'req-42' } });
    assertEnvelope(r, { id: 'req-42' });
    assertOk(r);
    const bare = await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, user);
    assertEnvelope(bare);
  });

  it('accepts the access token as a parameter as well as a bearer header', async () => {
    const r = await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC', access_token: user });
    assert.deepEqual(assertOk(r), await ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, user));
    const g = await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC', access_token: user }, undefined, { get: true, prefix: '/api/v2/' });
    assertOk(g);
  });

  it('answers an unknown method with -32601 and HTTP 404 on every prefix and transport', async () => {
    for (const prefix of PREFIXES) {
      for (const name of ['public/no_such_method', 'private/no_such_method']) {
        for (const mode of ['GET', 'POST'] as const) {
          const r = await rpc(url, name, { a: 1 }, user, { prefix, get: mode === 'GET' });
          assertError(r, -32601);
          assertEnvelope(r, { where: `${mode} ${prefix}${name}` });
        }
        const j = await rpc(url, name, {}, user, { prefix, jsonrpc: { id: 7 } });
        assertError(j, -32601);
        assertEnvelope(j, { id: 7, where: `JSON-RPC ${prefix}${name}` });
      }
    }
    // `/` is the web app now (src/api/http/webApp.ts); any other path outside the API is still unknown
    for (const path of ['/nope', '/v2/public/get_time', '/v1/get_time', '/v1/public/', '/api/v3/public/get_time']) {
      const r = await request(url, path);
      assertError(r, -32601);
      assertEnvelope(r, { where: path });
    }
  });
});
