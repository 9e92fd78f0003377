// The market timers only the leader runs: each second the index prints, the settlement, order-expiry,
// transfer, withdrawal and RFQ checks and the liquidation scan, and every minute the listings, each
// a command through the sequencer. Started and stopped by services.ts.
import type { CurrencyCode } from '../domain/currency.ts';
import type { Command } from '../engine/commands.ts';
import { scanForLiquidation } from '../engine/liquidation.ts';
import { instrumentFields, listingsFor } from '../market/catalog.ts';
import { walletDue } from '../wallet/wallet.ts';
import { nextRfqDue } from '../blockrfq/engine.ts';
import { startIndexFeeds } from './indexFeeds.ts';
import { timed } from './metrics.ts';
import type { Services } from './services.ts';
import { runInTurns } from './turns.ts';

/** The longest slice of the liquidation scan in one event-loop turn, ms. */
const SCAN_SLICE_MS = 1;

/** Index feeds, listings and order expiry: each a command through the sequencer. */
export function startMarketTimers(s: Services): { ready: Promise<void>; stop(): void } {
  const { ex, seq, config, catalog, log } = s;
  const submit = (cmd: Command) => seq.submit(cmd, (r) => r).catch((err) => log.error({ err, t: cmd.t }, 'market command failed'));
  const feeds = startIndexFeeds(config, catalog, ex, log);
  let lastTick = s.clock.now();
  const initial = feeds.initial().map(submit);

  const listNew = () => timed(s.metrics, 'listing', listDue);
  const listDue = () => {
    const now = s.clock.now();
    const indexPrices: Record<string, number> = {};
    const listed: Record<string, number[]> = {};
    // a currency without an index yet (venues not fresh at start) is listed once it has one
    const priced = catalog.currencies.filter((cc) => ex.index[cc.currency] !== undefined);
    for (const cc of priced) {
      indexPrices[cc.currency] = ex.indexPrice(cc.currency);
      listed[cc.currency] = [];
    }
    for (const inst of ex.instruments.values()) listed[inst.currency]?.push(inst.expiry);
    const specs = listingsFor({ ...catalog, currencies: priced }, now, indexPrices, listed);
    if (specs.length === 0) return Promise.resolve();
    const fields = new Map(catalog.currencies.map((cc) => [cc.currency, instrumentFields(cc)]));
    return submit({ t: 'list', instruments: specs.map((sp) => ({ ...sp, ...fields.get(sp.currency)! })) });
  };

  const ready = Promise.all(initial)
    .then(() => feeds.warm())
    .then((prints) => Promise.all(prints.map(submit)))
    .then(() => listNew())
    .then(() => undefined);

  /** Settles every expiry that has passed (settlement first: the TWAP window closed at expiry). */
  const settleDue = (now: number): Promise<unknown>[] => {
    const due = new Map<string, { currency: CurrencyCode; expiry: number }>();
    for (const inst of ex.instruments.values()) {
      if (inst.state !== 'delivered' && inst.expiry <= now) due.set(`${inst.currency}:${inst.expiry}`, { currency: inst.currency, expiry: inst.expiry });
    }
    return [...due.values()].map((d) => submit({ t: 'settle', currency: d.currency, expiry: d.expiry }));
  };
  s.marketTick = async () => {
    const now = s.clock.now();
    const settled = settleDue(now);
    if (ex.trading.nextExpiry() <= now) settled.push(submit({ t: 'expire_orders' }));
    if (ex.subaccounts.users.nextDue() <= now) settled.push(submit({ t: 'confirm_transfers' }));
    if (walletDue(ex, now)) settled.push(submit({ t: 'wallet_complete_due' }));
    if (nextRfqDue(ex) <= now) settled.push(submit({ t: 'rfq_expire' }));
    await Promise.all(settled);
    await listNew();
  };

  // Each step of the second's work runs in a turn of its own (issue 16: no turn holds the engine
  // for more than 2 ms). An index print refreshes every mark of its currency, 0.2-1 ms for the
  // ~830 series of the default catalog here; the two currencies' prints and the first slice of the
  // liquidation scan in one turn held it 2-5 ms in 8 of 20 seconds under the open-loop bench.
  // Between steps, orders that arrived are served. The steps keep their order, and each is one
  // sequenced command (or none), so what the journal holds is the same commands as before.
  let stopped = false;
  const tick = setInterval(() => runInTurns(marketSteps(), (step) => timed(s.metrics, 'market_tick', step), () => stopped), 1000);
  const marketSteps = (): Array<() => void> => {
    const now = s.clock.now();
    const steps: Array<() => void> = [];
    // a series replaced by settlement is listed at once, not at the next listing timer
    steps.push(() => {
      if (settleDue(now).length > 0) void listNew();
    });
    // a test clock jumping hours ahead would otherwise make one huge move, which the engine
    // rejects as a bad print (maxIndexJump) and the feed would never come back within bounds
    const dt = Math.min(Math.max(0, now - lastTick), 60_000);
    for (const step of feeds.steps(dt)) {
      steps.push(() => {
        const cmd = step();
        if (cmd !== null) void submit(cmd);
      });
    }
    lastTick = now;
    steps.push(() => {
      if (ex.trading.nextExpiry() <= now) void submit({ t: 'expire_orders' });
      // transfers to other users whose hold has passed (src/accounts/userTransfers.ts)
      if (ex.subaccounts.users.nextDue() <= now) void submit({ t: 'confirm_transfers' });
      // sandbox withdrawals whose automatic completion is due (src/wallet/; never in production)
      if (walletDue(ex, now)) void submit({ t: 'wallet_complete_due' });
      // block RFQs and quotes whose time has passed (src/blockrfq/)
      if (nextRfqDue(ex) <= now) void submit({ t: 'rfq_expire' });
    });
    // after the index moved the marks: one journaled liquidation step per account below
    // maintenance margin or still flagged (API.md 5.3, src/engine/liquidation.ts); the step is its
    // first slice, and the scan yields between the others itself
    steps.push(() => void scanLiquidations());
    return steps;
  };

  // The scan values every position after an index move: milliseconds for thousands of them. It runs
  // in slices of at most SCAN_SLICE_MS, each in its own turn, so no order waits behind all of it.
  let scanning = false;
  const scanLiquidations = async () => {
    if (scanning) return; // the previous second's scan is still going: it sees the new marks too
    scanning = true;
    try {
      let sliceStart = performance.now();
      for (const a of scanForLiquidation(ex)) {
        if (a !== null) void submit({ t: 'liquidate', userId: a.userId, currency: a.currency });
        const elapsed = performance.now() - sliceStart;
        if (elapsed > SCAN_SLICE_MS) {
          s.metrics.work('liquidation_scan_slice', elapsed / 1000);
          await new Promise((r) => setImmediate(r));
          sliceStart = performance.now();
        }
      }
      s.metrics.work('liquidation_scan_slice', (performance.now() - sliceStart) / 1000);
    } catch (err) {
      log.error({ err }, 'liquidation scan failed');
    } finally {
      scanning = false;
    }
  };
  const listing = setInterval(() => void listNew(), 60_000);
  tick.unref();
  listing.unref();
  return {
    ready,
    stop() {
      stopped = true;
      feeds.stop();
      clearInterval(tick);
      clearInterval(listing);
    },
  };
}
