// Issue 14, finding 7: small input bugs a hostile or careless client could use.
// - a JSON-RPC id that is not a number, a string or null (an 8,000-deep nesting) is -32600 and the
//   method does NOT run (over HTTP and WebSocket);
// - edit with another reduce_only than the order's is refused, not silently ignored;
// - labels and other free text refuse control characters and bidi overrides;
// - a client_order_id reused for another order is refused instead of answering the unrelated one.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { assertError, assertOk } from '../helpers/envelope.ts';
import { atmCall, type Market } from '../helpers/market.ts';
import { adminToken, ok, rawRequest, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

function deepId(depth: number): string {
  return '['.repeat(depth) + '1' + ']'.repeat(depth);
}

/** One raw text frame over a fresh WebSocket; resolves with the first reply. */
async function wsFrame(url: string, text: string): Promise<any> {
  const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws/api/v2');
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  let timer: NodeJS.Timeout | undefined;
  // a server that never answers must fail the test, not hang it
  const reply = new Promise<any>((resolve) => {
    timer = setTimeout(() => resolve({ no_reply_within_ms: 10_000 }), 10_000);
    ws.once('message', (raw) => resolve(JSON.parse(raw.toString())));
  });
  ws.send(text);
  const r = await reply;
  clearTimeout(timer);
  ws.close();
  return r;
}

describe('input hardening (issue 14, finding 7)', () => {
  let server: TestServer;
  let url: string;
  let user: string;
  let atm: Market;
  const openOrders = async () => ok(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, user);

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    user = await userToken(url, admin, 'input@example.com', { currency: 'BTC', amount: 10 });
    atm = await atmCall(url);
  });
  after(() => server.stop());

  it('answers -32600 to a JSON-RPC id nested 8,000 deep over HTTP and places no order', async () => {
    const params = JSON.stringify({ instrument_name: atm.name, amount: 0.1, price: atm.prices[0] });
    for (const id of [deepId(8000), '{"a":1}', '[1]', JSON.stringify('x'.repeat(257)), 'true']) {
      const body = `{"jsonrpc":"2.0","id":${id},"method":"private/buy","params":${params}}`;
      const r = await rawRequest(url, 'POST', '/api/v2/private/buy', { headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json' }, body });
      assertError(r, -32600, {}, id.slice(0, 20));
      assert.equal(r.body.id, null);
    }
    assert.deepEqual(await openOrders(), []);
    // acceptable ids are echoed
    for (const id of [7, 'abc', null, 1.5, 'x'.repeat(256)]) {
      const r = await rpc(url, 'public/get_time', {}, undefined, { jsonrpc: { id } });
      assertOk(r);
      assert.deepEqual(r.body.id, id);
    }
  });

  it('answers -32600 to a deep id over WebSocket and places no order', async () => {
    const params = JSON.stringify({ instrument_name: atm.name, amount: 0.1, price: atm.prices[0], access_token: user });
    const r = await wsFrame(url, `{"jsonrpc":"2.0","id":${deepId(8000)},"method":"private/buy","params":${params}}`);
    assert.equal(r.error?.code, -32600, JSON.stringify(r).slice(0, 300));
    assert.equal(r.id, null);
    assert.deepEqual(await openOrders(), []);
    const good = await wsFrame(url, `{"jsonrpc":"2.0","id":"s-1","method":"public/get_time","params":{}}`);
    assert.equal(good.id, 's-1');
    assert.equal(typeof good.result, 'number');
  });

  it('refuses an edit that would change reduce_only (11029 reduce_only_not_editable) and leaves the order as it was', async () => {
    const placed = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.2, price: atm.prices[0] }, user);
    const id = placed.order.order_id;
    const r = await rpc(url, 'private/edit', { order_id: id, amount: 0.1, price: atm.prices[0], reduce_only: true }, user);
    assertError(r, 11029, { reason: 'reduce_only_not_editable', param: 'reduce_only' });
    const state = await ok(url, 'private/get_order_state', { order_id: id }, user);
    assert.equal(state.amount, 0.2);
    assert.equal(state.reduce_only, false);
    // the order's own value is accepted (clients that send every field)
    const edited = await ok(url, 'private/edit', { order_id: id, amount: 0.1, price: atm.prices[0], reduce_only: false }, user);
    assert.equal(edited.order.amount, 0.1);
    await ok(url, 'private/cancel_all', {}, user);
  });

  it('refuses labels with NUL, other control characters or bidi overrides with -32602 control_or_bidi_character', async () => {
    for (const label of ['a\u0000b', 'line\nforged', '\u202Egnp.exe', 'x\u2066y', '\u0085', 'del\u007f']) {
      const r = await rpc(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], label }, user);
      assertError(r, -32602, { reason: 'control_or_bidi_character', param: 'label' }, JSON.stringify(label));
      assertError(await rpc(url, 'private/cancel_by_label', { label }, user), -32602, { param: 'label' });
    }
    // over the query string too
    const q = await rpc(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], label: 'a\u202Eb' }, user, { get: true });
    assertError(q, -32602, { reason: 'control_or_bidi_character' });
    assertError(await rpc(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], client_order_id: 'id\u0000' }, user), -32602, { param: 'client_order_id' });
    assert.deepEqual(await openOrders(), []);
    // ordinary text, other scripts and emoji pass
    const okLabel = 'grid-7 日本 ✓ 🚀';
    const placed = await ok(url, 'private/buy', { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], label: okLabel }, user);
    assert.equal(placed.order.label, okLabel);
    await ok(url, 'private/cancel_all', {}, user);
  });

  it('refuses a client_order_id reused for another instrument, side, amount or price (11029 client_order_id_reused); a true retry gets the first order', async () => {
    const other = atm.prices.length > 1 ? atm.prices[1] : atm.prices[0];
    const base = { instrument_name: atm.name, amount: 0.1, price: atm.prices[0], client_order_id: 'cid-1' };
    const first = await ok(url, 'private/buy', base, user);
    const retry = await ok(url, 'private/buy', base, user);
    assert.equal(retry.order.order_id, first.order.order_id);
    const otherInst = (await ok(url, 'public/get_instruments', { currency: 'BTC' })).find((i: any) => i.instrument_name !== atm.name && i.option_type === 'put');
    const variants: [string, Record<string, unknown>, string][] = [
      ['amount', { ...base, amount: 0.2 }, 'private/buy'],
      ['price', { ...base, price: other }, 'private/buy'],
      ['instrument', { ...base, instrument_name: otherInst.instrument_name, price: 0.0005 }, 'private/buy'],
      ['side', base, 'private/sell'],
    ];
    for (const [what, params, method] of variants) {
      if (what === 'price' && other === atm.prices[0]) continue;
      assertError(await rpc(url, method, params, user), 11029, { reason: 'client_order_id_reused', param: 'client_order_id' }, what);
    }
    assert.deepEqual((await openOrders()).map((o: any) => o.order_id), [first.order.order_id]);
    await ok(url, 'private/cancel_all', {}, user);
  });
});
