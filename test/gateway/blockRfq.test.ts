// Block RFQ channels through a gateway process (issue 34): block_rfq.maker.*, block_rfq.maker.quotes.*,
// block_rfq.taker.* and block_rfq.trades.* come from the NATS stream, to the same users and with the
// same data as on the leader's own socket. Each user is connected twice, to the leader and through the
// gateway, and every channel's notifications must be equal. Adversarial: a user not marked as a maker
// subscribes to block_rfq.maker.any and gets nothing; a maker not named in an RFQ's makers does not get
// it; a maker never sees an undisclosed taker's name; nobody else sees a taker's RFQs or a maker's quotes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { adminToken, ok, startServer, userToken } from '../helpers/server.ts';
import { freshStream } from '../helpers/nats.ts';
import { WsClient } from '../helpers/ws.ts';
import { spawnGateway, until } from '../helpers/gateway.ts';
import { atmCall, cheapCall, nearMark, twinPut } from '../helpers/market.ts';

const TAKER = 'gwrfq-taker@example.com';
const MAKER = 'gwrfq-maker@example.com';
const MAKER2 = 'gwrfq-maker2@example.com';
const OTHER = 'gwrfq-other@example.com';
const PRIVATE = ['block_rfq.maker.any', 'block_rfq.maker.BTC', 'block_rfq.maker.ETH', 'block_rfq.maker.quotes.any', 'block_rfq.taker.BTC', 'block_rfq.taker.any'];
const PUBLIC = ['block_rfq.trades.BTC', 'block_rfq.trades.any', 'block_rfq.trades.ETH'];

test('through a gateway process: every block_rfq.* channel as on the leader, private ones to the right users only', async (t) => {
  const ns = await freshStream(t);
  if (!ns) return;
  const srv = await startServer({ ...ns.env });
  t.after(() => srv.stop());
  const admin = await adminToken(srv.url);
  const tokens: Record<string, string> = {};
  for (const e of [TAKER, MAKER, MAKER2, OTHER]) tokens[e] = await userToken(srv.url, admin, e, { currency: 'BTC', amount: 10 });
  const idOf = async (email: string): Promise<number> => (await ok(srv.url, 'private/get_block_rfq_user_info', {}, tokens[email])).users[0].user_id;
  for (const m of [MAKER, MAKER2]) await ok(srv.url, 'private/set_block_rfq_maker', { user_id: await idOf(m), is_maker: true }, admin);
  // three more makers, never connected: an anonymous RFQ must reach at least 5 makers (Deribit's rule)
  for (const e of ['gwrfq-maker3@example.com', 'gwrfq-maker4@example.com', 'gwrfq-maker5@example.com']) {
    tokens[e] = await userToken(srv.url, admin, e, { currency: 'BTC', amount: 10 });
    await ok(srv.url, 'private/set_block_rfq_maker', { user_id: await idOf(e), is_maker: true }, admin);
  }
  const call = await atmCall(srv.url);
  const cheap = await cheapCall(srv.url);
  const gw = await spawnGateway({ STRIKEBOOK_LEADER_URL: srv.url, NATS_URL: ns.url, STRIKEBOOK_NATS_STREAM: ns.stream, STRIKEBOOK_NATS_SUBJECT_PREFIX: ns.prefix });
  t.after(() => gw.proc.kill('SIGKILL'));

  // each user twice: on the leader's socket and through the gateway; an anonymous one for the trades
  const sides = { direct: srv.url, gateway: gw.url } as const;
  const conns: Record<string, Record<string, WsClient>> = { direct: {}, gateway: {} };
  for (const [side, url] of Object.entries(sides)) {
    for (const e of [TAKER, MAKER, MAKER2, OTHER]) {
      const c = await WsClient.open(url);
      t.after(() => c.ws.close());
      await c.auth(e);
      // every private RFQ channel, whatever the user's role: the server decides what it gets
      assert.deepEqual(await c.ok('private/subscribe', { channels: [...PRIVATE, ...PUBLIC] }), [...PRIVATE, ...PUBLIC], `${side} ${e}: all subscribed`);
      conns[side]![e] = c;
    }
    const anon = await WsClient.open(url);
    t.after(() => anon.ws.close());
    // public channels only for an anonymous caller; the private ones are left out, as on the leader
    assert.deepEqual(await anon.ok('public/subscribe', { channels: [...PUBLIC, 'block_rfq.maker.any', 'block_rfq.taker.any'] }), PUBLIC, `${side}: anonymous`);
    conns[side]!.anon = anon;
  }
  const gwc = conns.gateway!;

  const legs = [
    { instrument_name: call.name, amount: 2, direction: 'buy' },
    { instrument_name: cheap.name, amount: 1, direction: 'sell' },
  ];
  const priced = [
    { instrument_name: call.name, price: nearMark(call), direction: 'buy' },
    { instrument_name: cheap.name, price: nearMark(cheap), direction: 'sell' },
  ];
  const price = Math.round((2 * nearMark(call) - nearMark(cheap)) * 1e4) / 1e4;

  // ---- RFQ 1: undisclosed, to every maker; the taker and the maker act through the gateway
  const rfq1 = await gwc[TAKER]!.ok('private/create_block_rfq', { legs, disclosed: false });
  const id1 = rfq1.block_rfq_id;
  const of = (c: WsClient, ch: string, id: number) => c.on(ch).filter((n) => (n.data as any).block_rfq_id === id).map((n) => n.data as any);
  await until('the maker sees the new RFQ through the gateway', () => of(gwc[MAKER]!, 'block_rfq.maker.BTC', id1).length > 0);
  const seen = of(gwc[MAKER]!, 'block_rfq.maker.BTC', id1)[0];
  assert.equal(seen.state, 'open');
  assert.equal(seen.role, 'maker');
  assert.equal('taker' in seen, false, 'undisclosed: the maker is not told the taker');
  assert.ok(!JSON.stringify(gwc[MAKER]!.on('block_rfq.maker.BTC')).includes(TAKER), 'nowhere in what the maker got');
  await until('the second maker sees it too', () => of(gwc[MAKER2]!, 'block_rfq.maker.any', id1).length > 0);

  const q = await gwc[MAKER]!.ok('private/add_block_rfq_quote', { block_rfq_id: id1, amount: 1, direction: 'sell', legs: priced, price, label: 'gw-q' });
  await until('the maker sees its quote', () => gwc[MAKER]!.on('block_rfq.maker.quotes.any').some((n) => (n.data as any).block_rfq_quote_id === q.block_rfq_quote_id));
  await until('the taker sees the ask', () => of(gwc[TAKER]!, 'block_rfq.taker.BTC', id1).some((r) => r.asks.length > 0));
  const ask = of(gwc[TAKER]!, 'block_rfq.taker.BTC', id1).find((r) => r.asks.length > 0);
  assert.equal(ask.asks[0].price, price);
  assert.deepEqual(ask.asks[0].makers, ['ANONYMOUS'], 'undisclosed: the taker is not told the maker');
  assert.equal(ask.role, 'taker');

  await gwc[TAKER]!.ok('private/accept_block_rfq', { block_rfq_id: id1, price, amount: 1, direction: 'buy', legs: priced, time_in_force: 'fill_or_kill' });
  await until('the trade on block_rfq.trades.BTC', () => gwc.anon!.on('block_rfq.trades.BTC').length > 0);
  const tr = gwc.anon!.on('block_rfq.trades.BTC')[0]!.data as any;
  assert.equal(tr.amount, 1);
  assert.equal(tr.legs.length, 2);
  await until('the taker sees it filled', () => of(gwc[TAKER]!, 'block_rfq.taker.BTC', id1).some((r) => r.state === 'filled'));

  // ---- RFQ 2: disclosed, to MAKER only; cancelled by the taker
  const rfq2 = await gwc[TAKER]!.ok('private/create_block_rfq', { legs, disclosed: true, makers: [MAKER] });
  const id2 = rfq2.block_rfq_id;
  await until('the named maker sees RFQ 2', () => of(gwc[MAKER]!, 'block_rfq.maker.any', id2).length > 0);
  assert.equal(of(gwc[MAKER]!, 'block_rfq.maker.any', id2)[0].taker, TAKER, 'disclosed: the taker is named');
  await gwc[TAKER]!.ok('private/cancel_block_rfq', { block_rfq_id: id2 });
  await until('the taker sees RFQ 2 cancelled', () => of(gwc[TAKER]!, 'block_rfq.taker.any', id2).some((r) => r.state === 'cancelled'));
  await until('the maker sees RFQ 2 cancelled', () => of(gwc[MAKER]!, 'block_rfq.maker.any', id2).some((r) => r.state === 'cancelled'));

  // ---- the same on both sides, channel by channel and user by user (the direct socket is the reference)
  const all = (c: WsClient, ch: string) => c.on(ch).map((n) => n.data);
  for (const who of [TAKER, MAKER, MAKER2, OTHER, 'anon']) {
    for (const ch of who === 'anon' ? PUBLIC : [...PRIVATE, ...PUBLIC]) {
      // equal counts, not "the gateway caught up": the leader writes a round to its sockets in slices
      // (src/api/ws/hubState.ts), so the gateway, fed through NATS, can be ahead of a direct socket
      await until(`${who} ${ch}: the gateway has what the leader sent`, () => all(gwc[who]!, ch).length === all(conns.direct![who]!, ch).length);
      assert.deepEqual(all(gwc[who]!, ch), all(conns.direct![who]!, ch), `${who} ${ch}: as on the leader's socket`);
    }
  }
  // what each got, so that the comparison above is not of empty lists
  const g = (who: string, ch: string) => all(gwc[who]!, ch) as any[];
  assert.ok(g(TAKER, 'block_rfq.taker.any').length >= 5, 'the taker: created, quoted, filled, created, cancelled');
  assert.deepEqual(new Set(g(TAKER, 'block_rfq.taker.any').map((r) => r.block_rfq_id)), new Set([id1, id2]));
  assert.deepEqual(g(TAKER, 'block_rfq.maker.any'), [], 'the taker is no maker');
  assert.deepEqual(g(TAKER, 'block_rfq.maker.quotes.any'), []);
  assert.deepEqual(new Set(g(MAKER, 'block_rfq.maker.any').map((r) => r.block_rfq_id)), new Set([id1, id2]));
  assert.deepEqual(g(MAKER, 'block_rfq.maker.ETH'), [], 'no ETH RFQ');
  assert.deepEqual(g(MAKER, 'block_rfq.taker.any'), [], 'the maker asked for nothing');
  assert.deepEqual(new Set(g(MAKER2, 'block_rfq.maker.any').map((r) => r.block_rfq_id)), new Set([id1]), 'RFQ 2 named MAKER only');
  assert.deepEqual(g(MAKER2, 'block_rfq.maker.quotes.any'), [], 'not its quotes');
  for (const ch of PRIVATE) assert.deepEqual(g(OTHER, ch), [], `a user not marked as a maker gets nothing on ${ch}`);
  assert.equal(g(OTHER, 'block_rfq.trades.any').length, 1, 'the public trade reaches everyone');
  assert.deepEqual(g('anon', 'block_rfq.trades.ETH'), []);
  assert.equal(g('anon', 'block_rfq.trades.any').length, 1);

  // ---- combos: a combo's orders and leg trades travel on user.orders / user.trades / user.changes,
  // and each side's combo trade on user.combo_trades.* (docs/api-notes.md "Combo market data"),
  // through the gateway as on the leader
  const COMBO = ['user.orders.any.any.raw', 'user.trades.any.any.raw', 'user.changes.any.any.raw', 'user.combo_trades.any.any.raw'];
  for (const who of [MAKER2, OTHER]) {
    assert.deepEqual(await conns.direct![who]!.ok('private/subscribe', { channels: COMBO }), COMBO, 'direct: the leader serves them');
    assert.deepEqual(await conns.gateway![who]!.ok('private/subscribe', { channels: COMBO }), COMBO, 'gateway: so does the gateway');
  }
  const put = await twinPut(srv.url, call);
  const combo = await gwc[MAKER2]!.ok('private/create_combo', { trades: [{ instrument_name: call.name, direction: 'buy', amount: 1 }, { instrument_name: put.name, direction: 'buy', amount: 1 }] });
  const cp = Math.round((nearMark(call) + nearMark(put)) * 1e4) / 1e4;
  await gwc[OTHER]!.ok('private/sell', { instrument_name: combo.id, amount: 1, type: 'limit', price: cp });
  await gwc[MAKER2]!.ok('private/buy', { instrument_name: combo.id, amount: 1, type: 'limit', price: cp });
  for (const who of [MAKER2, OTHER]) {
    for (const ch of COMBO) {
      await until(`${who} ${ch} through the gateway`, () => all(conns.direct![who]!, ch).length > 0 && all(gwc[who]!, ch).length === all(conns.direct![who]!, ch).length);
      assert.deepEqual(all(gwc[who]!, ch), all(conns.direct![who]!, ch), `${who} ${ch}: the combo as on the leader's socket`);
    }
    const legTrades = (all(gwc[who]!, 'user.trades.any.any.raw') as any[]).flat();
    assert.equal(legTrades.length, 2, `${who}: both legs traded`);
    assert.ok(legTrades.every((x) => x.combo_id === combo.id), 'leg trades carry the combo id');
    const mine = (all(gwc[who]!, 'user.combo_trades.any.any.raw') as any[]).flat();
    assert.equal(mine.length, 1, `${who}: its side of the combo trade through the gateway`);
    assert.equal(mine[0].instrument_name, combo.id);
    assert.equal(mine[0].direction, who === MAKER2 ? 'buy' : 'sell');
  }
});
