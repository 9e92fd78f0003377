// The combo channels (issue 34; docs/api-notes.md "Combo market data") through a stream gateway: the
// leader's stream events carry the combo books' changes, the combo trades and each user's side of
// them, so a gateway serves `book.{combo}.*`, `ticker.{combo}.*`, `trades.{combo}.*`,
// `trades.option_combo.{currency}.*` and `user.combo_trades.*` with the leader's frames. Each check
// subscribes on the leader's own socket and on the target's (the gateway, or the engine again) and
// compares what each got: the book's snapshot and changes, the combo trade, the ticker after the fill,
// the taker's user.combo_trades. Adversarial: a combo made after the gateway started is subscribed at
// once (the gateway learns it from the stream or asks the leader); leg channels (trades.option.*,
// trades.any.*, trades.<leg>.*) get no combo trade and trades.option_combo.* no leg trade (a gateway
// routing the stream's trades by currency alone fails this); another user's user.combo_trades nothing.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { atmCall, twinPut } from '../helpers/market.ts';
import { adminToken, ok, userToken } from '../helpers/server.ts';
import { startTarget, wsTargets, type Target, type TargetSpec } from '../helpers/targets.ts';
import { WsClient } from '../helpers/ws.ts';

const MAKER = 'combo-gw@example.com';
const TAKER = 'combo-gw-taker@example.com';
const OTHER = 'combo-gw-other@example.com';

function suite(spec: TargetSpec): void {
  let tg: Target;
  let combo: string;
  let option: string;
  let put: string;
  let maker: string;
  let taker: string;
  let price: number;
  before(async () => {
    tg = await startTarget(spec.kind);
    const url = tg.srv.url;
    const admin = await adminToken(url);
    maker = await userToken(url, admin, MAKER, { currency: 'BTC', amount: 100 });
    taker = await userToken(url, admin, TAKER, { currency: 'BTC', amount: 100 });
    await userToken(url, admin, OTHER, { currency: 'BTC', amount: 100 });
    const call = await atmCall(url);
    const p = await twinPut(url, call);
    option = call.name;
    put = p.name;
  });
  after(() => tg.stop());

  /** A combo of this suite's legs in `ratio` (each test its own, made after the gateway started). */
  const newCombo = async (ratio: number): Promise<string> => {
    const id = (await ok(tg.srv.url, 'private/create_combo', { trades: [{ instrument_name: option, direction: 'buy', amount: 1 }, { instrument_name: put, direction: 'buy', amount: ratio }] }, maker)).id;
    const t = await ok(tg.srv.url, 'public/ticker', { instrument_name: id });
    price = Math.min(t.max_price, Math.max(t.min_price, Math.round(t.mark_price * 1e4) / 1e4));
    return id;
  };

  test('subscribes the public combo channels with the option channels, at once after the combo is made', async () => {
    combo = await newCombo(1);
    const ws = await WsClient.open(tg.ws);
    try {
      const comboChannels = [`book.${combo}.100ms`, `book.${combo}.none.10.100ms`, `ticker.${combo}.100ms`, `trades.${combo}.100ms`, 'trades.option_combo.BTC.100ms', 'trades.option_combo.any.agg2'];
      const optionChannels = [`book.${option}.100ms`, `trades.${option}.100ms`];
      const answer = await ws.ok('public/subscribe', { channels: [...comboChannels, ...optionChannels, 'book.BTC-CS-1JAN27-1_2.100ms', `quote.${combo}`] });
      assert.deepEqual(answer, [...comboChannels, ...optionChannels], 'an unknown combo and a combo quote are left out, as on the leader');
      await ws.until(() => ws.on(`book.${combo}.100ms`).length > 0 && ws.on(`ticker.${combo}.100ms`).length > 0, 5000, 'the book snapshot and the first ticker');
      assert.equal(ws.on(`book.${combo}.100ms`)[0]!.data.type, 'snapshot');
    } finally {
      await ws.close();
    }
  });

  test('subscribes the private combo trades channels', async () => {
    const ws = await WsClient.open(tg.ws);
    try {
      await ws.auth(MAKER);
      const comboChannels = [`user.combo_trades.${combo}.raw`, 'user.combo_trades.option_combo.BTC.100ms', 'user.combo_trades.any.any.raw'];
      const optionChannels = [`user.trades.${option}.raw`];
      const answer = await ws.ok('private/subscribe', { channels: [...comboChannels, ...optionChannels, 'user.combo_trades.option.BTC.raw'] });
      assert.deepEqual(answer, [...comboChannels, ...optionChannels]);
    } finally {
      await ws.close();
    }
  });

  test("a combo's book change, trade and ticker arrive with the leader's frames; leg and combo trades each on their own channels", async () => {
    const id = await newCombo(2);
    const PUBLIC = [`book.${id}.raw`, `trades.${id}.raw`, 'trades.option_combo.BTC.raw', 'trades.option_combo.any.100ms', `ticker.${id}.100ms`, 'trades.option.BTC.raw', 'trades.any.any.100ms', `trades.${option}.raw`];
    // the leg form of user.combo_trades too (a leg's name: the trades of its combos)
    const PRIVATE = [`user.combo_trades.${id}.raw`, 'user.combo_trades.any.any.100ms', `user.combo_trades.${option}.raw`, `user.combo_trades.${put}.100ms`];
    const sides = { leader: tg.srv.url, target: tg.ws } as const;
    const conns: Record<string, Record<string, WsClient>> = { leader: {}, target: {} };
    try {
      for (const [side, url] of Object.entries(sides)) {
        for (const who of [TAKER, OTHER]) {
          const c = await WsClient.open(url);
          conns[side]![who] = c;
          // raw channels need a login, as on Deribit
          await c.auth(who);
          assert.deepEqual(await c.ok('private/subscribe', { channels: [...PUBLIC, ...PRIVATE] }), [...PUBLIC, ...PRIVATE], `${side} ${who}: all subscribed`);
        }
      }
      const data = (c: WsClient, ch: string) => c.on(ch).map((n) => n.data as any);
      const lead = conns.leader![TAKER]!;
      const via = conns.target![TAKER]!;
      await via.until(() => data(via, `book.${id}.raw`).length > 0 && data(via, `ticker.${id}.100ms`).length > 0, 5000, 'snapshot and first ticker through the target');
      await lead.until(() => data(lead, `book.${id}.raw`).length > 0 && data(lead, `ticker.${id}.100ms`).length > 0, 5000, 'snapshot and first ticker on the leader');

      // a resting ask (a combo book change), then the taker's buy against it (a combo trade, the level gone)
      await ok(tg.srv.url, 'private/sell', { instrument_name: id, amount: 0.2, price }, maker);
      for (const c of [lead, via]) await c.until(() => data(c, `book.${id}.raw`).some((d) => d.type === 'change' && d.asks.length > 0), 5000, 'the resting ask');
      await ok(tg.srv.url, 'private/buy', { instrument_name: id, amount: 0.2, price }, taker);
      const settled = (c: WsClient) =>
        data(c, `book.${id}.raw`).some((d) => d.asks?.some((a: any[]) => a[0] === 'delete')) &&
        data(c, `trades.${id}.raw`).length > 0 &&
        data(c, 'trades.option_combo.BTC.raw').length > 0 &&
        data(c, 'trades.option_combo.any.100ms').length > 0 &&
        data(c, `ticker.${id}.100ms`).some((d) => d.last_price === price) &&
        data(c, `trades.${option}.raw`).length > 0 &&
        data(c, `user.combo_trades.${id}.raw`).length > 0 &&
        data(c, 'user.combo_trades.any.any.100ms').length > 0 &&
        data(c, `user.combo_trades.${option}.raw`).length > 0 &&
        data(c, `user.combo_trades.${put}.100ms`).length > 0;
      for (const c of [lead, via]) await c.until(() => settled(c), 5000, 'the fill on every channel');

      // the book: the snapshot (but its timestamp: the moment each read it) and every change equal
      const book = (c: WsClient) => data(c, `book.${id}.raw`);
      const { timestamp: _a, ...snapVia } = book(via)[0];
      const { timestamp: _b, ...snapLead } = book(lead)[0];
      assert.deepEqual(snapVia, snapLead, 'the snapshot');
      assert.deepEqual(book(via).slice(1), book(lead).slice(1), 'the changes, chained as the leader chains them');
      assert.deepEqual(book(via).slice(1).map((d) => d.asks), [[['new', price, 0.2]], [['delete', price, 0]]]);
      assert.equal(book(via)[1].prev_change_id, book(via)[0].change_id);
      assert.equal(book(via).at(-1).change_id, (await ok(tg.srv.url, 'public/get_order_book', { instrument_name: id })).change_id, "change_id as get_order_book's");

      // the combo trade, on the combo's channel and the currency's, as the leader sends it
      for (const ch of [`trades.${id}.raw`, 'trades.option_combo.BTC.raw', 'trades.option_combo.any.100ms']) assert.deepEqual(data(via, ch), data(lead, ch), ch);
      const [trade] = data(via, `trades.${id}.raw`)[0];
      assert.equal(trade.instrument_name, id);
      assert.equal(trade.price, price);
      assert.equal(trade.amount, 0.2);
      assert.equal(trade.trade_id, `COMBO-${trade.combo_trade_id}`);
      assert.deepEqual((await ok(tg.srv.url, 'public/get_last_trades_by_instrument', { instrument_name: id })).trades, [trade]);

      // the ticker after the fill: the leader's (the engine's clock moves only with commands, so the
      // target's read of it after the fill is the same object)
      const tick = (c: WsClient) => data(c, `ticker.${id}.100ms`).find((d) => d.last_price === price);
      assert.deepEqual(tick(via), tick(lead), 'the ticker with the fill');
      assert.equal(tick(via).instrument_name, id);

      // the leg channels carry the leg trades only, the combo channels the combo trades only
      // both sides have them (the leader writes a round to its sockets in slices, src/api/ws/hubState.ts,
      // so a gateway fed through NATS can be ahead of the leader's own socket)
      await via.until(() => data(lead, 'trades.option.BTC.raw').length > 0 && data(via, 'trades.option.BTC.raw').flat().length === data(lead, 'trades.option.BTC.raw').flat().length && data(via, 'trades.any.any.100ms').length > 0, 5000, 'the leg trades');
      assert.deepEqual(data(via, `trades.${option}.raw`), data(lead, `trades.${option}.raw`), `trades.${option}.raw`);
      // (a gateway sends a kind channel's trades one message per instrument, the leader one per batch)
      assert.deepEqual(data(via, 'trades.option.BTC.raw').flat(), data(lead, 'trades.option.BTC.raw').flat(), 'trades.option.BTC.raw');
      for (const ch of ['trades.option.BTC.raw', 'trades.any.any.100ms', `trades.${option}.raw`]) {
        const got = data(via, ch).flat();
        assert.ok(got.length > 0 && got.every((x: any) => x.instrument_name !== id && x.combo_id === id), `${ch}: leg trades of the fill, no combo trade`);
      }
      for (const ch of [`trades.${id}.raw`, 'trades.option_combo.BTC.raw', 'trades.option_combo.any.100ms']) assert.ok(data(via, ch).flat().every((x: any) => x.instrument_name === id), `${ch}: no leg trade`);

      // the taker's side of the combo trade on user.combo_trades, equal; the other user gets none
      for (const ch of PRIVATE) assert.deepEqual(data(via, ch), data(lead, ch), ch);
      const mine = data(via, `user.combo_trades.${id}.raw`).flat();
      assert.equal(mine.length, 1);
      assert.equal(mine[0].direction, 'buy');
      assert.equal(mine[0].liquidity, 'T');
      assert.equal(mine[0].legs.length, 2);
      for (const ch of [`user.combo_trades.${option}.raw`, `user.combo_trades.${put}.100ms`]) assert.deepEqual(data(via, ch).flat(), mine, `${ch}: the combo trade of that leg`);
      // given the leader time to send the other user anything (the taker's came through already)
      await new Promise((r) => setTimeout(r, 300));
      for (const side of ['leader', 'target']) for (const ch of PRIVATE) assert.deepEqual(data(conns[side]![OTHER]!, ch), [], `${side}: ${ch} of another user`);
      for (const ch of PUBLIC.filter((c) => c.startsWith('trades.'))) {
        const [o, l] = [conns.target![OTHER]!, conns.leader![OTHER]!];
        await o.until(() => data(l, ch).length > 0 && data(o, ch).flat().length === data(l, ch).flat().length, 5000, `the other user's ${ch}`);
        assert.deepEqual(data(o, ch).flat(), data(l, ch).flat(), `the other user's ${ch}`);
      }
    } finally {
      for (const side of Object.values(conns)) for (const c of Object.values(side)) await c.close();
    }
  });
}

for (const spec of await wsTargets()) describe(spec.name, { skip: spec.skip }, () => suite(spec));
