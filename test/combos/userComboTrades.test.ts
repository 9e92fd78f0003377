// The private combo trades channels (issue 34): user.combo_trades.{combo}.{interval} and
// user.combo_trades.{kind}.{currency}.{interval} send each user its own side of its combo trades, as
// Deribit's user trade (the combo's name, net price, the user's combo order, the sum of its leg fees,
// its leg trades as `legs`), with every field get_user_trades_by_instrument documents; the leg-name form
// user.combo_trades.{leg}.{interval} sends the trades of the combos of that leg (and not of others); a
// third user's subscription gets nothing, and an unknown combo, instrument or kind is left out of the
// subscribe answer.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DERIBIT_METHODS_PATH, diffKey, readDeribitMethods, shapeDiffs } from '../helpers/deribitMethods.ts';
import { atmCall, cheapCall, twinPut } from '../helpers/market.ts';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

const documented = readDeribitMethods();
/** Fields Deribit sends only for other trades (block trades, RFQs, liquidations, quotes). */
const CONDITIONAL = new Set(['block_trade_id', 'block_rfq_id', 'block_rfq_quote_id', 'liquidation', 'quote_set_id', 'quote_id', 'trade_allocations', 'advanced', 'combo_id', 'combo_trade_id', 'legs']);

/**
 * What in a user combo trade differs from get_user_trades_by_instrument's documented trade; null
 * without the reference (a clone with no ../shared beside it), which the test then says.
 */
function gaps(trade: unknown): string[] | null {
  if (documented === null) return null;
  const d = documented.find((m) => m.name === 'private/get_user_trades_by_instrument');
  assert.ok(d, 'get_user_trades_by_instrument is in the reference');
  const diffs = shapeDiffs({ trades: [trade], has_more: false }, d.result).map(diffKey);
  // the reference's known slip (test/api/deribitConformance.test.ts): Deribit sends these as booleans
  const slip = (k: string) => /^type \$\.trades\[\]\.(post_only|reduce_only): string$/.test(k);
  return [...new Set(diffs)].filter((k) => !CONDITIONAL.has(k.split('.').at(-1)!) && !slip(k));
}

describe('user.combo_trades channels', () => {
  let server: TestServer;
  let maker: string;
  let taker: string;
  let combo: string;
  let price: number;
  let legs: string[];
  /** a listed instrument that is no leg of the combo */
  let notALeg: string;

  before(async () => {
    server = await startServer();
    const admin = await adminToken(server.url);
    maker = await userToken(server.url, admin, 'uct-maker@example.com', { currency: 'BTC', amount: 100 });
    taker = await userToken(server.url, admin, 'uct-taker@example.com', { currency: 'BTC', amount: 100 });
    await userToken(server.url, admin, 'uct-other@example.com', { currency: 'BTC', amount: 100 });
    const call = await atmCall(server.url);
    const put = await twinPut(server.url, call);
    legs = [call.name, put.name];
    notALeg = (await cheapCall(server.url)).name;
    assert.ok(!legs.includes(notALeg));
    combo = (await ok(server.url, 'private/create_combo', { trades: [{ instrument_name: call.name, direction: 'buy', amount: 1 }, { instrument_name: put.name, direction: 'buy', amount: 1 }] }, maker)).id;
    const t = await ok(server.url, 'public/ticker', { instrument_name: combo });
    price = Math.min(t.max_price, Math.max(t.min_price, Math.round(t.mark_price * 1e4) / 1e4));
  });

  after(async () => {
    await server?.stop();
  });

  it("sends each user exactly its own side, and another user's subscription nothing", async (t) => {
    // the leg-name form (Deribit's own example subscribes a leg, user.combo_trades.BTC-PERPETUAL.100ms,
    // and gets the trade of a combo of it): each leg of the combo brings its combo trade
    const channels = [`user.combo_trades.${combo}.raw`, `user.combo_trades.${combo}.100ms`, 'user.combo_trades.option_combo.BTC.raw', 'user.combo_trades.any.any.100ms', `user.combo_trades.${legs[0]}.raw`, `user.combo_trades.${legs[1]}.100ms`];
    const refused = ['user.combo_trades.BTC-CS-1JAN27-1_2.raw', 'user.combo_trades.BTC-1JAN27-1-C.raw', 'user.combo_trades.option.BTC.raw', 'user.combo_trades.option_combo.XYZ.raw', `user.combo_trades.${combo}.1s`, `user.combo_trades.${legs[0]}.1s`];
    const socket = async (email: string) => {
      const ws = await WsClient.open(server.url);
      await ws.auth(email);
      const quiet = `user.combo_trades.${notALeg}.raw`;
      assert.deepEqual(await ws.ok('private/subscribe', { channels: [...channels, quiet, ...refused] }), [...channels, quiet], 'the unknown combo, instrument, kind, currency and interval are left out');
      return ws;
    };
    const [mws, tws, ows] = [await socket('uct-maker@example.com'), await socket('uct-taker@example.com'), await socket('uct-other@example.com')];
    try {
      const rest = await ok(server.url, 'private/sell', { instrument_name: combo, amount: 0.3, price }, maker);
      const fill = await ok(server.url, 'private/buy', { instrument_name: combo, amount: 0.2, price }, taker);
      assert.equal(fill.trades.length, 2, 'one leg trade per leg');
      const comboTradeId = fill.trades[0].combo_trade_id;
      for (const ws of [mws, tws]) await ws.until(() => channels.every((c) => ws.on(c).length > 0), 5000, 'every combo trades channel');

      const sides = [
        { ws: mws, order: rest.order.order_id, direction: 'sell', liquidity: 'M', state: 'open', token: maker },
        { ws: tws, order: fill.order.order_id, direction: 'buy', liquidity: 'T', state: 'filled', token: taker },
      ];
      for (const side of sides) {
        const first = side.ws.on(channels[0]!)[0]!.data;
        assert.ok(Array.isArray(first) && first.length === 1, 'an array of one combo trade');
        for (const c of channels) assert.deepEqual(side.ws.on(c).map((n) => n.data), [first], `${c}: the same one trade, once`);
        const tr = first[0];
        const missing = gaps(tr);
        if (missing === null) t.diagnostic(`no Deribit reference at ${DERIBIT_METHODS_PATH}: the fields' types are not checked against it`);
        else assert.deepEqual(missing, [], 'every documented field with its type');
        assert.equal(tr.trade_id, `COMBO-${comboTradeId}`);
        assert.equal(tr.combo_trade_id, comboTradeId);
        assert.equal(tr.combo_id, combo);
        assert.equal(tr.instrument_name, combo);
        assert.equal(tr.price, price);
        assert.equal(tr.amount, 0.2);
        assert.equal(tr.direction, side.direction);
        assert.equal(tr.order_id, side.order);
        assert.equal(tr.liquidity, side.liquidity);
        assert.equal(tr.state, side.state);
        assert.equal(tr.fee_currency, 'BTC');
        assert.equal(typeof tr.fee, 'number');
        assert.equal(typeof tr.post_only, 'boolean');
        assert.equal(typeof tr.reduce_only, 'boolean');
        // the legs: the user's own leg trades of this combo trade, and the fee is their sum
        const own = await ok(server.url, 'private/get_user_trades_by_currency', { currency: 'BTC', count: 100 }, side.token);
        const legTrades = own.trades.filter((t: any) => t.combo_trade_id === comboTradeId).sort((a: any, b: any) => legs.indexOf(a.instrument_name) - legs.indexOf(b.instrument_name));
        assert.equal(legTrades.length, 2);
        assert.deepEqual(tr.legs, legTrades);
        // (each leg trade names its own leg order, as in Deribit's example)
        assert.deepEqual(tr.legs.map((l: any) => [l.instrument_name, l.liquidity, l.combo_trade_id]), legs.map((n) => [n, side.liquidity, comboTradeId]));
        const feeSum = tr.legs.reduce((s: number, l: any) => s + Math.round(l.fee * 1e8), 0);
        assert.equal(Math.round(tr.fee * 1e8), feeSum, 'the fee is the sum of the leg fees');
        assert.ok(feeSum > 0, 'a fee was charged');
      }
      // the third user's subscriptions: nothing (checked after both sides' arrived, on the same ticks)
      await ows.ok('public/test');
      for (const c of channels) assert.deepEqual(ows.on(c), [], `${c} of a user with no combo trade`);
      // a leg of no combo that traded: nothing, for anyone
      for (const ws of [mws, tws, ows]) assert.deepEqual(ws.on(`user.combo_trades.${notALeg}.raw`), [], 'an instrument that is no leg of the traded combo');
    } finally {
      for (const ws of [mws, tws, ows]) await ws.close();
    }
  });
});
