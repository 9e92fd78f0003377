// Block RFQs over HTTP and WebSocket (issue 34): a taker asks, makers quote, the taker accepts and
// every leg trades at once. Adversarial: a non-maker cannot quote, a maker never sees an undisclosed
// taker, a quote cannot fill beyond its maker's margin, after its expiry or after its cancel.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, cheapCall, nearMark, twinPut, type Market } from '../helpers/market.ts';
import { adminToken, ok, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

const TAKER = 'rfq-taker@example.com';
const MAKER = 'rfq-maker@example.com';
const MAKER2 = 'rfq-maker2@example.com';
const POOR = 'rfq-poor@example.com';
/** two more makers, marked once the anonymous RFQ's rule is checked (Deribit: at least 5 makers) */
const EXTRA = ['rfq-maker3@example.com', 'rfq-maker4@example.com'];

describe('block RFQs over HTTP and WebSocket', () => {
  let server: TestServer;
  let url: string;
  let admin: string;
  let taker: string;
  let maker: string;
  let maker2: string;
  let other: string;
  let poor: string;
  let extra: string[];
  let call: Market;
  let cheap: Market;
  let ws: WsClient;
  let makerWs: WsClient;

  const idOf = async (token: string): Promise<number> => (await ok(url, 'private/get_block_rfq_user_info', {}, token)).users[0].user_id;
  const positions = async (token: string) => {
    const list = await ok(url, 'private/get_positions', { currency: 'BTC' }, token);
    return Object.fromEntries(list.filter((p: any) => p.size !== 0).map((p: any) => [p.instrument_name, p.size]));
  };
  const structure = () => [
    { instrument_name: call.name, amount: 2, direction: 'buy' },
    { instrument_name: cheap.name, amount: 1, direction: 'sell' },
  ];
  const pricedLegs = () => [
    { instrument_name: call.name, price: nearMark(call), direction: 'buy' },
    { instrument_name: cheap.name, price: nearMark(cheap), direction: 'sell' },
  ];
  const legsPrice = () => Math.round((2 * nearMark(call) - nearMark(cheap)) * 1e4) / 1e4;

  before(async () => {
    server = await startServer({});
    url = server.url;
    admin = await adminToken(url);
    taker = await userToken(url, admin, TAKER, { currency: 'BTC', amount: 10 });
    maker = await userToken(url, admin, MAKER, { currency: 'BTC', amount: 10 });
    maker2 = await userToken(url, admin, MAKER2, { currency: 'BTC', amount: 10 });
    other = await userToken(url, admin, 'rfq-other@example.com', { currency: 'BTC', amount: 10 });
    poor = await userToken(url, admin, POOR, { currency: 'BTC', amount: 0.001 });
    extra = [];
    for (const e of EXTRA) extra.push(await userToken(url, admin, e, { currency: 'BTC', amount: 10 }));
    call = await atmCall(url);
    cheap = await cheapCall(url);
    for (const t of [maker, maker2, poor]) await ok(url, 'private/set_block_rfq_maker', { user_id: await idOf(t), is_maker: true }, admin);
    ws = await WsClient.open(url);
    await ws.auth(TAKER);
    makerWs = await WsClient.open(url);
    await makerWs.auth(MAKER);
  });

  after(async () => {
    await ws?.close();
    await makerWs?.close();
    await server?.stop();
  });

  it('marks makers by an operator only; lists them and the user info', async () => {
    const r = await rpc(url, 'private/set_block_rfq_maker', { user_id: await idOf(other), is_maker: true }, taker);
    assert.ok(r.body.error, 'a user may not mark makers');
    const makers = await ws.ok('private/get_block_rfq_makers');
    assert.deepEqual([...makers].sort(), [MAKER, MAKER2, POOR].sort());
    const info = await makerWs.ok('private/get_block_rfq_user_info');
    assert.equal(info.parent.identity, MAKER);
    assert.equal(info.parent.is_maker, true);
    assert.equal(info.users[0].taker_rating, null);
  });

  it('refuses an anonymous RFQ that reaches fewer than 5 makers (11029, data.param disclosed), as Deribit does', async () => {
    const refused = async (params: Record<string, unknown>, why: string) => {
      const r = await rpc(url, 'private/create_block_rfq', { legs: structure(), disclosed: false, ...params }, taker);
      assert.equal(r.body.error?.code, 11029, `${why}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.data.reason, 'too_few_makers_for_anonymous_block_rfq');
      assert.equal(r.body.error.data.param, 'disclosed');
    };
    await refused({}, 'every maker, 3 of them');
    await refused({ makers: [MAKER, MAKER2] }, 'two named makers');
    await refused({ makers: [MAKER, MAKER, MAKER, MAKER, MAKER] }, 'one maker named five times');
    assert.equal((await ok(url, 'private/get_block_rfqs', { role: 'taker' }, taker)).block_rfqs.length, 0, 'nothing was created');
    // disclosed, the same RFQ goes to one maker (the second: the first's view is checked for the
    // taker's name below)
    const named = await ok(url, 'private/create_block_rfq', { legs: structure(), makers: [MAKER2] }, taker);
    assert.equal(named.disclosed, true);
    await ok(url, 'private/cancel_block_rfq', { block_rfq_id: named.block_rfq_id }, taker);
    // five makers: anonymous RFQs to every maker pass from here on
    for (const t of extra) await ok(url, 'private/set_block_rfq_maker', { user_id: await idOf(t), is_maker: true }, admin);
  });

  it('creates an RFQ (ratios from the leg amounts), hides the undisclosed taker from makers, refuses quotes of non-makers', async () => {
    const rfq = await ok(url, 'private/create_block_rfq', { legs: structure(), disclosed: false, label: 'spread' }, taker);
    assert.equal(rfq.state, 'open');
    assert.equal(rfq.role, 'taker');
    assert.equal(rfq.amount, 1);
    assert.deepEqual(rfq.legs.map((l: any) => [l.instrument_name, l.ratio, l.direction]), [[call.name, 2, 'buy'], [cheap.name, 1, 'sell']]);
    assert.equal(rfq.expiration_timestamp - rfq.creation_timestamp, 300_000);
    const seen = await makerWs.ok('private/get_block_rfqs', { role: 'maker' });
    const mine = seen.block_rfqs.find((x: any) => x.block_rfq_id === rfq.block_rfq_id);
    assert.ok(mine, 'a maker sees an RFQ sent to every maker');
    assert.equal(mine.role, 'maker');
    assert.equal('taker' in mine, false, 'an undisclosed taker is not named to makers');
    assert.ok(!JSON.stringify(seen).includes(TAKER), 'nowhere in the maker view');
    // a non-maker cannot quote (and does not see it)
    const q = await rpc(url, 'private/add_block_rfq_quote', { block_rfq_id: rfq.block_rfq_id, amount: 1, direction: 'sell', legs: pricedLegs() }, other);
    assert.ok(q.body.error);
    assert.equal((await ok(url, 'private/get_block_rfqs', { role: 'maker' }, other)).block_rfqs.length, 0);
    await ok(url, 'private/cancel_block_rfq', { block_rfq_id: rfq.block_rfq_id }, taker);
  });

  it('quotes, edits, shows the best ask to the taker, accepts fill-or-kill: every leg on both accounts at the leg prices', async () => {
    const rfq = await ws.ok('private/create_block_rfq', { legs: structure(), disclosed: true });
    const id = rfq.block_rfq_id;
    const q1 = await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs(), price: legsPrice(), execution_instruction: 'all_or_none', label: 'q1' }, maker);
    assert.equal(q1.quote_state, 'open');
    assert.equal(q1.price, legsPrice());
    assert.equal(q1.execution_instruction, 'all_or_none');
    // a price other than the legs' sum is refused
    const bad = await makerWs.call('private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs(), price: legsPrice() + 1 });
    assert.ok(bad.error);
    const up = call.prices[call.prices.indexOf(nearMark(call)) + 1]!;
    const edited = await makerWs.ok('private/edit_block_rfq_quote', { block_rfq_quote_id: q1.block_rfq_quote_id, amount: 1, legs: [{ instrument_name: call.name, price: up }, { instrument_name: cheap.name, price: nearMark(cheap) }] });
    assert.equal(edited.replaced, true);
    assert.equal(edited.block_rfq_quote_id, q1.block_rfq_quote_id);
    const q2 = await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs() }, maker2);
    const quotes = await makerWs.ok('private/get_block_rfq_quotes', { block_rfq_id: id });
    assert.deepEqual(quotes.map((q: any) => q.block_rfq_quote_id), [q1.block_rfq_quote_id]);
    const view = (await ok(url, 'private/get_block_rfqs', { block_rfq_id: id }, taker)).block_rfqs[0];
    assert.equal(view.asks[0].price, legsPrice(), 'the best ask first');
    assert.deepEqual(view.asks[0].makers, [MAKER2], 'disclosed: the makers are named');
    // a limit below every ask: nothing trades
    const low = await ws.call('private/accept_block_rfq', { block_rfq_id: id, price: legsPrice() - 0.01, amount: 1, direction: 'buy', legs: pricedLegs(), time_in_force: 'fill_or_kill' });
    assert.ok(low.error);
    assert.deepEqual(await positions(taker), {});
    const before = await positions(maker2);
    const done = await ws.ok('private/accept_block_rfq', { block_rfq_id: id, price: legsPrice(), amount: 1, direction: 'buy', legs: pricedLegs(), time_in_force: 'fill_or_kill' });
    assert.equal(done.block_trades.length, 1);
    const trades = done.block_trades[0].trades;
    assert.deepEqual(trades.map((t: any) => [t.instrument_name, t.direction, t.amount, t.price, t.block_rfq_id]).sort(), [[call.name, 'buy', 2, nearMark(call), id], [cheap.name, 'sell', 1, nearMark(cheap), id]].sort());
    assert.deepEqual(await positions(taker), { [call.name]: 2, [cheap.name]: -1 });
    assert.deepEqual(await positions(maker2), { ...before, [call.name]: -2, [cheap.name]: 1 });
    const closed = (await ok(url, 'private/get_block_rfqs', { block_rfq_id: id }, taker)).block_rfqs[0];
    assert.equal(closed.state, 'filled');
    assert.equal(closed.trades[0].amount, 1);
    // the other maker's quote went with the RFQ: it can neither fill nor be edited
    assert.deepEqual(await makerWs.ok('private/get_block_rfq_quotes', { block_rfq_id: id }), []);
    const pub = await ok(url, 'public/get_block_rfq_trades', { currency: 'BTC' });
    assert.equal(pub.block_rfqs[0].amount, 1);
    assert.equal(pub.block_rfqs[0].legs.length, 2);
    assert.equal((await ok(url, 'private/get_block_rfq_user_info', {}, taker)).users[0].taker_rating, 100);
    void q2;
  });

  it('a quote cannot fill after its cancel, after its expiry, nor beyond its maker\'s margin; a trigger fills when a quote reaches its price', async () => {
    const rfq = await ok(url, 'private/create_block_rfq', { legs: structure() }, taker);
    const id = rfq.block_rfq_id;
    const accept = (tif = 'fill_or_kill') => rpc(url, 'private/accept_block_rfq', { block_rfq_id: id, price: legsPrice(), amount: 1, direction: 'buy', legs: pricedLegs(), time_in_force: tif }, taker);
    const base = await positions(taker);
    // cancelled
    const q = await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs(), label: 'c' }, maker);
    const cancelled = await makerWs.ok('private/cancel_block_rfq_quote', { block_rfq_quote_id: q.block_rfq_quote_id });
    assert.equal(cancelled.quote_state, 'cancelled');
    assert.ok((await accept()).body.error);
    // expired (the clock passes its expires_at)
    const now = await ok(url, 'public/get_time');
    await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs(), expires_at: now + 1000 }, maker);
    await ok(url, 'private/set_test_time', { timestamp: now + 2000 }, admin);
    assert.ok((await accept()).body.error);
    // the poor maker's quote: refused when made (its margin cannot carry the legs)
    const poorQuote = await rpc(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs() }, poor);
    assert.equal(poorQuote.body.error?.code, 10009);
    // a quote whose maker's margin is gone by the acceptance: passed over, nothing trades
    const q3 = await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs() }, maker2);
    const cash = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, maker2);
    await ok(url, 'private/withdraw', { currency: 'BTC', amount: Math.floor(cash.available_withdrawal_funds * 1e4) / 1e4, address: 'x' }, maker2).catch(() => undefined);
    const drained = await ok(url, 'private/get_account_summary', { currency: 'BTC' }, maker2);
    if (drained.available_funds < 0.5) {
      assert.ok((await accept()).body.error, 'a maker without margin does not fill');
      assert.deepEqual(await positions(taker), base);
    }
    await ok(url, 'private/cancel_block_rfq_quote', { block_rfq_quote_id: q3.block_rfq_quote_id }, maker2);
    // good til cancelled: waits, then fills when a quote reaches its price
    const waiting = await accept('good_til_cancelled');
    assert.equal(waiting.body.result.trade_trigger.state, 'untriggered');
    const off = await ws.ok('private/cancel_block_rfq_trigger', { block_rfq_id: id });
    assert.equal(off.trade_trigger.state, 'cancelled');
    await accept('good_til_cancelled');
    await makerWs.ok('private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs() });
    const after = (await ok(url, 'private/get_block_rfqs', { block_rfq_id: id }, taker)).block_rfqs[0];
    assert.equal(after.state, 'filled');
    assert.equal(after.trade_trigger.state, 'triggered');
    const delta = await positions(taker);
    assert.equal(delta[call.name], (base[call.name] ?? 0) + 2);
    assert.equal(delta[cheap.name], (base[cheap.name] ?? 0) - 1);
  });

  it('cancels all quotes; an RFQ expires on the clock; limits open RFQs per taker', async () => {
    const rfq = await ok(url, 'private/create_block_rfq', { legs: structure() }, taker);
    await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: rfq.block_rfq_id, amount: 1, direction: 'buy', legs: pricedLegs() }, maker);
    await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: rfq.block_rfq_id, amount: 1, direction: 'sell', legs: pricedLegs() }, maker);
    assert.equal(await makerWs.ok('private/cancel_all_block_rfq_quotes', { block_rfq_id: rfq.block_rfq_id }), 2);
    await ok(url, 'private/set_test_time', { timestamp: rfq.expiration_timestamp + 1000 }, admin);
    assert.equal((await ok(url, 'private/get_block_rfqs', { block_rfq_id: rfq.block_rfq_id }, taker)).block_rfqs[0].state, 'expired');
    const made: number[] = [];
    for (let i = 0; i < 11; i++) {
      const r = await rpc(url, 'private/create_block_rfq', { legs: structure() }, taker);
      if (r.body.error) {
        assert.equal(r.body.error.data?.reason, 'too_many_open_block_rfqs');
        break;
      }
      made.push(r.body.result.block_rfq_id);
    }
    assert.equal(made.length, 10);
    for (const id of made) await ok(url, 'private/cancel_block_rfq', { block_rfq_id: id }, taker);
  });

  it('streams the RFQ to makers (block_rfq.maker.*), quotes to their maker (block_rfq.maker.quotes.*), bids and asks to the taker (block_rfq.taker.*) and the trade to everyone (block_rfq.trades.*)', async () => {
    const pub = await WsClient.open(url);
    try {
      await ws.ok('private/subscribe', { channels: ['block_rfq.taker.BTC'] });
      await makerWs.ok('private/subscribe', { channels: ['block_rfq.maker.BTC', 'block_rfq.maker.quotes.any'] });
      const subscribed = await pub.ok('public/subscribe', { channels: ['block_rfq.trades.BTC'] });
      assert.deepEqual(subscribed, ['block_rfq.trades.BTC']);
      const rfq = await ok(url, 'private/create_block_rfq', { legs: structure(), disclosed: false }, taker);
      const id = rfq.block_rfq_id;
      const mine = (ch: WsClient, name: string) => ch.on(name).filter((n: any) => n.data.block_rfq_id === id);
      await makerWs.until(() => mine(makerWs, 'block_rfq.maker.BTC').length > 0, 5000, 'the maker sees the RFQ');
      const seen = mine(makerWs, 'block_rfq.maker.BTC')[0] as any;
      assert.equal(seen.data.state, 'open');
      assert.equal('taker' in seen.data, false, 'undisclosed: the maker does not see the taker');
      await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs() }, maker);
      await makerWs.until(() => mine(makerWs, 'block_rfq.maker.quotes.any').length > 0, 5000, 'the maker sees its quote');
      await ws.until(() => mine(ws, 'block_rfq.taker.BTC').some((n: any) => n.data.asks.length > 0), 5000, 'the taker sees the ask');
      const ask = mine(ws, 'block_rfq.taker.BTC').find((n: any) => n.data.asks.length > 0) as any;
      assert.equal(ask.data.asks[0].price, legsPrice());
      assert.deepEqual(ask.data.asks[0].makers, ['ANONYMOUS']);
      await ok(url, 'private/accept_block_rfq', { block_rfq_id: id, price: legsPrice(), amount: 1, direction: 'buy', legs: pricedLegs(), time_in_force: 'fill_or_kill' }, taker);
      await pub.until(() => pub.on('block_rfq.trades.BTC').length > 0, 5000, 'the public sees the trade');
      const tr = pub.on('block_rfq.trades.BTC').at(-1) as any;
      assert.equal(tr.data.amount, 1);
      assert.equal(tr.data.legs.length, 2);
      await ws.until(() => mine(ws, 'block_rfq.taker.BTC').some((n: any) => n.data.state === 'filled'), 5000, 'the taker sees it filled');
    } finally {
      await pub.close();
    }
  });
  it('two makers fill one acceptance with a hedge leg (object and JSON text forms); a short acceptance answers 13907 and trades nothing', async () => {
    const put = await twinPut(url, call);
    await ok(url, 'private/set_block_rfq_maker', { user_id: await idOf(other), is_maker: true }, admin);
    const legs = [
      { instrument_name: call.name, amount: 4, direction: 'buy' },
      { instrument_name: cheap.name, amount: 2, direction: 'sell' },
    ];
    const hedge = { instrument_name: put.name, direction: 'sell', amount: 1, price: nearMark(put) };
    const rfq = await ws.ok('private/create_block_rfq', { legs, hedge, disclosed: true });
    assert.equal(rfq.amount, 2);
    assert.deepEqual(rfq.hedge, hedge);
    const id = rfq.block_rfq_id;
    const up = put.prices[put.prices.indexOf(nearMark(put)) + 1]!;
    const q1 = await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs(), hedge: { instrument_name: put.name, price: up } }, maker);
    assert.deepEqual(q1.hedge, { ...hedge, price: up });
    // a hedge that is not the RFQ's is refused
    const wrong = await rpc(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs(), hedge: { instrument_name: call.name, price: 1 } }, other);
    assert.equal(wrong.body.error?.data?.reason, 'hedge_mismatch');
    const before = await positions(taker);
    // one quote of 1 cannot fill 2: 13907, nothing trades
    const short = await ws.call('private/accept_block_rfq', { block_rfq_id: id, price: legsPrice(), amount: 2, direction: 'buy', legs: pricedLegs(), time_in_force: 'fill_or_kill' });
    assert.equal(short.error?.code, 13907);
    assert.equal(short.error?.message, 'not_fully_filled');
    assert.deepEqual(await positions(taker), before);
    await ok(url, 'private/add_block_rfq_quote', { block_rfq_id: id, amount: 1, direction: 'sell', legs: pricedLegs(), hedge: JSON.stringify({ instrument_name: put.name, price: nearMark(put) }) }, other);
    const done = await ws.ok('private/accept_block_rfq', { block_rfq_id: id, price: legsPrice(), amount: 2, direction: 'buy', legs: pricedLegs(), time_in_force: 'fill_or_kill' });
    assert.equal(done.block_trades.length, 2, 'one block trade per maker');
    for (const bt of done.block_trades) assert.equal(bt.trades.length, 3, 'both legs and the hedge');
    const hedgePrices = done.block_trades.map((bt: any) => bt.trades.find((t: any) => t.instrument_name === put.name).price).sort();
    assert.deepEqual(hedgePrices, [nearMark(put), up].sort());
    const afterPos = await positions(taker);
    assert.equal(afterPos[call.name], (before[call.name] ?? 0) + 4);
    assert.equal(afterPos[cheap.name], (before[cheap.name] ?? 0) - 2);
    assert.equal(afterPos[put.name], (before[put.name] ?? 0) - 1);
    const closed = (await ok(url, 'private/get_block_rfqs', { block_rfq_id: id }, taker)).block_rfqs[0];
    assert.deepEqual(closed.trades.map((t: any) => [t.amount, t.hedge_amount]), [[1, 0.5], [1, 0.5]]);
    const pub = (await ok(url, 'public/get_block_rfq_trades', { currency: 'BTC' })).block_rfqs[0];
    assert.equal(pub.trades.length, 2);
    assert.equal(pub.hedge.instrument_name, put.name);
  });
});
