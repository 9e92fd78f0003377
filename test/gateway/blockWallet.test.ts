// Block trades, approvals and the wallet through a gateway process (issue 34, issue 32): requests
// forwarded to the leader over the gateway's WebSocket and HTTP, block_trade_confirmations delivered
// from the NATS stream to the two parties only, withdrawals and transfers to a subaccount; and a
// removed subaccount's API key stops at once through the gateway (a new auth, a live socket, HTTP).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, rpc, startServer, userToken } from '../helpers/server.ts';
import { freshStream } from '../helpers/nats.ts';
import { WsClient } from '../helpers/ws.ts';
import { spawnGateway, until } from '../helpers/gateway.ts';
import { atmCall, nearMark } from '../helpers/market.ts';

test('through a gateway process: block trades with an approval, block_trade_confirmations, withdrawals, transfers, a removed subaccount key', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer({ ...ns.env, STRIKEBOOK_BLOCK_TRADE_MIN_BTC: '0.1', STRIKEBOOK_ADDRESS_BOOK_WAIT_MS: '0' });
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  await userToken(srv.url, admin, 'gw-maker@example.com', { currency: 'BTC', amount: 10 });
  await userToken(srv.url, admin, 'gw-taker@example.com', { currency: 'BTC', amount: 10 });
  await userToken(srv.url, admin, 'gw-third@example.com', { currency: 'BTC', amount: 10 });
  const call = await atmCall(srv.url);
  const gw = await spawnGateway({ STRIKEBOOK_LEADER_URL: srv.url, NATS_URL: ns.url, STRIKEBOOK_NATS_STREAM: ns.stream, STRIKEBOOK_NATS_SUBJECT_PREFIX: ns.prefix });
  t.after(() => gw.proc.kill('SIGKILL'));
  const maker = await WsClient.open(gw.url);
  const taker = await WsClient.open(gw.url);
  const third = await WsClient.open(gw.url);
  t.after(() => [maker, taker, third].forEach((c) => c.ws.close()));
  await maker.auth('gw-maker@example.com');
  await taker.auth('gw-taker@example.com');
  await third.auth('gw-third@example.com');
  for (const c of [maker, taker, third]) assert.deepEqual(await c.ok('private/subscribe', { channels: ['block_trade_confirmations.BTC'] }), ['block_trade_confirmations.BTC']);

  // ---- block trades: the taker requires approval; everything through the gateway
  assert.equal(await taker.ok('private/set_block_trade_approval', { enabled: true }), 'ok');
  const deal = { timestamp: await ok(gw.url, 'public/get_time'), nonce: 'gw-1', trades: [{ instrument_name: call.name, direction: 'sell', price: nearMark(call), amount: 1 }] };
  assert.equal(await maker.ok('private/simulate_block_trade', { role: 'maker', trades: deal.trades }), true);
  const { signature } = await maker.ok('private/verify_block_trade', { ...deal, role: 'maker' });
  const waiting = await taker.ok('private/execute_block_trade', { ...deal, role: 'taker', counterparty_signature: signature });
  assert.equal(waiting.state, 'waiting_for_approval');
  const reqs = await taker.ok('private/get_block_trade_requests');
  assert.equal(reqs[0].nonce, 'gw-1');
  assert.equal(reqs[0].state.value, 'initial');
  // the wrong party through the gateway: refused
  const wrong = await third.call('private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'gw-1', role: 'taker' });
  assert.equal(wrong.error?.code, 13020, JSON.stringify(wrong));
  assert.equal(await taker.ok('private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'gw-1', role: 'taker' }), 'ok');
  const trades = await taker.ok('private/get_block_trades', { currency: 'BTC' });
  assert.equal(trades.length, 1);
  const one = await maker.ok('private/get_block_trade', { id: trades[0].id });
  assert.equal(one.trades[0].direction, 'sell');
  // over the gateway's HTTP side too
  const httpTaker = await userTokenAt(gw.url, 'gw-taker@example.com');
  assert.equal((await ok(gw.url, 'private/get_block_trades', { currency: 'BTC' }, httpTaker))[0].id, trades[0].id);
  // a second request, rejected over HTTP through the gateway
  const deal2 = { ...deal, nonce: 'gw-2' };
  const sig2 = (await maker.ok('private/verify_block_trade', { ...deal2, role: 'maker' })).signature;
  await taker.ok('private/execute_block_trade', { ...deal2, role: 'taker', counterparty_signature: sig2 });
  assert.equal(await ok(gw.url, 'private/reject_block_trade', { timestamp: deal.timestamp, nonce: 'gw-2', role: 'taker' }, httpTaker), 'ok');
  const late = await taker.call('private/approve_block_trade', { timestamp: deal.timestamp, nonce: 'gw-2', role: 'taker' });
  assert.equal(late.error?.data?.reason, 'block_trade_request_rejected');
  assert.equal((await taker.ok('private/get_block_trades', { currency: 'BTC' })).length, 1, 'the rejected one never executed');

  // block_trade_confirmations from the stream: both parties, each change; nobody else
  const seen = (c: WsClient) => c.on('block_trade_confirmations.BTC').map((n) => `${n.data.nonce}:${n.data.state.value}`);
  await until('taker confirmations', () => seen(taker).length >= 4);
  assert.deepEqual(seen(taker), ['gw-1:initial', 'gw-1:executed', 'gw-2:initial', 'gw-2:rejected']);
  await until('maker confirmations', () => seen(maker).length >= 4);
  assert.deepEqual(seen(maker), ['gw-1:accepted', 'gw-1:executed', 'gw-2:accepted', 'gw-2:accepted']);
  assert.equal(maker.on('block_trade_confirmations.BTC')[3]!.data.counterparty_state.value, 'rejected');
  assert.deepEqual(third.on('block_trade_confirmations.BTC'), [], 'private to the parties');

  // ---- wallet through the gateway: an address-book entry, a withdrawal, the list
  await maker.ok('private/add_to_address_book', { currency: 'BTC', type: 'withdrawal', address: 'bc1qgateway', label: 'gw', beneficiary_vasp_name: 'Vasp', beneficiary_vasp_did: 'did:example:1', beneficiary_address: 'Street 1', agreed: true, personal: true });
  const w = await maker.ok('private/withdraw', { currency: 'BTC', address: 'bc1qgateway', amount: 0.01, nonce: 'gw-w1' });
  assert.equal(w.amount, 0.01);
  const ws = await maker.ok('private/get_withdrawals', { currency: 'BTC' });
  assert.equal(ws.data[0].id, w.id);
  const httpMaker = await userTokenAt(gw.url, 'gw-maker@example.com');
  assert.equal((await ok(gw.url, 'private/get_withdrawals', { currency: 'BTC' }, httpMaker)).data[0].id, w.id);

  // ---- a subaccount with an API key; transfers to it; removed, its key stops at once
  const sub = await maker.ok('private/create_subaccount');
  const tr = await maker.ok('private/submit_transfer_to_subaccount', { currency: 'BTC', amount: 0.5, destination: sub.id });
  assert.equal(tr.state, 'confirmed');
  const refresh = (await rpc(gw.url, 'public/auth', { grant_type: 'password', username: 'gw-maker@example.com', password: 'user-password-1' })).body.result.refresh_token;
  const subSession = (await ok(gw.url, 'public/exchange_token', { refresh_token: refresh, subject_id: sub.id })).access_token;
  const key = await ok(gw.url, 'private/create_api_key', { max_scope: 'account:read_write trade:read_write wallet:read_write', name: 'subkey' }, subSession);
  const subWs = await WsClient.open(gw.url);
  t.after(() => subWs.ws.close());
  const auth = await subWs.ok('public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret });
  assert.equal((await subWs.ok('private/get_account_summary', { currency: 'BTC', extended: true })).id, sub.id);
  // the subaccount gives its money back, so that it can be removed
  await subWs.ok('private/submit_transfer_between_subaccounts', { currency: 'BTC', amount: 0.5, source: sub.id, destination: (await maker.ok('private/get_subaccounts'))[0].id });
  assert.equal(await maker.ok('private/remove_subaccount', { subaccount_id: sub.id }), 'ok');
  // at once: the live socket, the key's HTTP token and a new auth with the key, all through the gateway
  const onSocket = await subWs.call('private/get_account_summary', { currency: 'BTC' });
  assert.equal(onSocket.error?.code, 13009, JSON.stringify(onSocket));
  assert.equal((await rpc(gw.url, 'private/get_account_summary', { currency: 'BTC' }, auth.access_token)).body.error?.code, 13009);
  const again = await rpc(gw.url, 'public/auth', { grant_type: 'client_credentials', client_id: key.client_id, client_secret: key.client_secret });
  assert.ok(again.body.error, `a removed subaccount's key authenticates nothing: ${JSON.stringify(again.body)}`);
});

async function userTokenAt(url: string, email: string): Promise<string> {
  return (await ok(url, 'public/auth', { grant_type: 'password', username: email, password: 'user-password-1' })).access_token;
}
