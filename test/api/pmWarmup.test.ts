// Through the edge (HTTP, and WebSocket's deferred orders): an order, a summary or a model switch of
// a portfolio-margin desk that arrives right after an index tick, before the liquidation scan
// rebuilt the desk's scenario sums, waits while they are rebuilt in slices (src/risk/portfolio/
// warmup.ts), so that the command's own turn does one leg's work instead of the desk's rebuild.
// Work is counted (PmRisk.work) inside the engine's apply, never timed.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Sequenced } from '../../src/engine/commands.ts';
import { PM_STEP_UNITS, maxLegUnits } from '../../src/risk/portfolio/pmRisk.ts';
import { pmWarmup } from '../../src/risk/portfolio/warmup.ts';
import { instruments, market, nearMark, type Market } from '../helpers/market.ts';
import { adminToken, ok, startServer, userToken, type TestServer } from '../helpers/server.ts';
import { WsClient } from '../helpers/ws.ts';

describe('a PM desk whose sums are stale waits for them at the edge', () => {
  let srv: TestServer;
  let admin: string;
  let desk: string;
  let deskId: number;
  let series: Market[];
  /** The recompute work done inside each command of the desk's that the engine applied. */
  const applied: { t: string; units: number }[] = [];

  before(async () => {
    srv = await startServer();
    admin = await adminToken(srv.url);
    await ok(srv.url, 'private/set_index_price', { index_name: 'btc_usd', price: 100000 }, admin);
    // the largest table (41 buckets x 3 vols + the extended moves): a desk's rebuild is many budgets' work
    await ok(srv.url, 'private/set_portfolio_margin_params', { price_buckets: 41 }, admin);
    desk = await userToken(srv.url, admin, 'pm-desk@example.com', { currency: 'BTC', amount: 200 });
    const cp = await userToken(srv.url, admin, 'pm-street@example.com', { currency: 'BTC', amount: 1000 });
    const ex = srv.app.services.ex;
    deskId = [...ex.users.values()].find((u) => u.email === 'pm-desk@example.com')!.id;
    await ok(srv.url, 'private/change_margin_model', { margin_model: 'segregated_pm' }, desk);
    // the desk takes one contract of (up to 60 of) the listed BTC options: long the calls, short the puts
    series = [];
    for (const i of (await instruments(srv.url)).slice(0, 60)) series.push(await market(srv.url, i));
    for (const m of series) {
      const price = nearMark(m);
      const deskBuys = m.inst.option_type === 'call';
      await ok(srv.url, deskBuys ? 'private/sell' : 'private/buy', { instrument_name: m.name, amount: 1, price }, cp);
      await ok(srv.url, deskBuys ? 'private/buy' : 'private/sell', { instrument_name: m.name, amount: 1, price }, desk);
    }
    const apply = ex.apply.bind(ex);
    const pm = ex.trading.risk.pm;
    ex.apply = (cmd: Sequenced) => {
      const w = pm.work;
      const r = apply(cmd);
      if ('userId' in cmd && cmd.userId === deskId) applied.push({ t: cmd.t, units: pm.work - w });
      return r;
    };
  });
  after(() => srv.stop());

  /** Moves the index (an applied command, as the feed's tick is), leaving every PM account stale. */
  const tick = (price: number) => srv.app.services.seq.submit({ t: 'index', currency: 'BTC', price, manual: true, by: null }, (r) => r);

  it('holds enough legs that a rebuild in one turn would be several budgets of work', () => {
    const ex = srv.app.services.ex;
    const u = ex.users.get(deskId)!;
    assert.ok(u.positions.size >= 20, `${u.positions.size} positions`);
    const pm = ex.trading.risk.pm;
    void tick(100_500);
    const w = pm.work;
    pm.freshFigures(u, 'BTC');
    assert.ok(pm.work - w > 3 * PM_STEP_UNITS, `a full rebuild: ${pm.work - w} units`);
  });

  let ticks = 0;
  /**
   * Ticks, then sends `send` in the same turn (the scan runs from the market tick, once a second);
   * returns the desk's commands applied meanwhile. Tried again if the scan got to the desk first.
   */
  async function afterTick(send: () => Promise<unknown>): Promise<{ t: string; units: number }[]> {
    const warm = pmWarmup(srv.app.services.ex);
    for (let attempt = 0; attempt < 3; attempt++) {
      applied.length = 0;
      const waited = warm.waited;
      const ticked = tick(99_000 + 10 * ++ticks);
      assert.equal(warm.needs(deskId), true, 'stale right after the tick');
      await send();
      await ticked;
      // the call waited, or (without a warm-up) its command did the rebuild itself: either tells
      if (warm.waited > waited || applied.some((c) => c.units > maxLegUnits())) return [...applied];
    }
    assert.fail('the scan refreshed the desk before each of three calls');
  }

  it('an order over HTTP: its check does one leg of work, the rebuild having run in slices before it', async () => {
    const m = series[3]!;
    const ran = await afterTick(() => ok(srv.url, 'private/sell', { instrument_name: m.name, amount: 1, price: m.prices[m.prices.length - 1] }, desk));
    const place = ran.find((c) => c.t === 'place');
    assert.ok(place !== undefined, 'the order was applied');
    assert.ok(place.units <= maxLegUnits(), `order check: ${place.units} units`);
  });

  it('an order over WebSocket (answered once durable) likewise', async () => {
    const ws = await WsClient.open(srv.url.replace('http', 'ws'));
    try {
      await ws.auth('pm-desk@example.com');
      const m = series[5]!;
      const ran = await afterTick(() => ws.ok('private/sell', { instrument_name: m.name, amount: 1, price: m.prices[m.prices.length - 1] }));
      const place = ran.find((c) => c.t === 'place');
      assert.ok(place !== undefined);
      assert.ok(place.units <= maxLegUnits(), `order check: ${place.units} units`);
    } finally {
      await ws.close();
    }
  });

  it('a summary read after a tick reads ready sums, and answers figures equal to a full rebuild', async () => {
    const ex = srv.app.services.ex;
    const risk = ex.trading.risk;
    const account = risk.account.bind(risk);
    const reads: number[] = [];
    risk.account = (user, currency) => {
      const w = risk.pm.work;
      const r = account(user, currency);
      if (user.id === deskId) reads.push(risk.pm.work - w);
      return r;
    };
    try {
      await afterTick(() => ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, desk));
    } finally {
      risk.account = account;
    }
    assert.ok(reads.length > 0, 'the summary read the figures');
    assert.ok(Math.max(...reads) <= maxLegUnits(), `the summary's reads: ${reads.join(', ')} units`);
    await afterTick(async () => {
      const s = await ok(srv.url, 'private/get_account_summary', { currency: 'BTC' }, desk);
      const f = ex.trading.risk.pm.freshFigures(ex.users.get(deskId)!, 'BTC');
      assert.ok(f.maintenanceMargin > 0);
      assert.ok(Math.abs(s.maintenance_margin - f.maintenanceMargin / 1e8) < 1e-9, `${s.maintenance_margin} against ${f.maintenanceMargin}`);
    });
  });

  it("user.portfolio: a round that finds the desk stale sends its summary in a later round, at the new index's figures", async () => {
    const ws = await WsClient.open(srv.url.replace('http', 'ws'));
    try {
      await ws.auth('pm-desk@example.com');
      await ws.ok('private/subscribe', { channels: ['user.portfolio.btc'] });
      await ws.until(() => ws.on('user.portfolio.btc').length > 0, 5000, 'the first summary');
      const ex = srv.app.services.ex;
      const seen = ws.on('user.portfolio.btc').length;
      await tick(98_000);
      // the next round may come before any call rebuilt the desk: the summary is owed, not skipped
      const want = () => ex.trading.risk.pm.freshFigures(ex.users.get(deskId)!, 'BTC').maintenanceMargin / 1e8;
      await ws.until(() => ws.on('user.portfolio.btc').slice(seen).some((n) => Math.abs(n.data.maintenance_margin - want()) < 1e-9), 5000, "a summary at the new index's figures");
    } finally {
      await ws.close();
    }
  });

  it('a model switch (and its dry run) reads ready sums', async () => {
    const switchTo = (margin_model: string, dry_run: boolean) => () => ok(srv.url, 'private/change_margin_model', { margin_model, dry_run }, desk);
    const dry = await afterTick(switchTo('segregated_sm', true));
    assert.deepEqual(dry, [], 'a dry run applies nothing');
    const real = await afterTick(switchTo('cross_pm', false));
    const sw = real.find((c) => c.t === 'change_margin_model');
    assert.ok(sw !== undefined, 'the switch was applied');
    assert.ok(sw.units <= maxLegUnits(), `switch: ${sw.units} units`);
  });
});
