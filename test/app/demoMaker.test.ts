// `npm start` in sandbox mode (API.md 8): soon after starting, a newcomer sees BTC and ETH
// instruments with two-sided books from the demo market makers, and trades appearing. The makers
// quote every series at start and the takers trade 30 times a minute by default, so this takes a
// few seconds (test/app/demoMarket.test.ts checks the depth and the rate on the pinned clock);
// the test allows 30 (no timing test: CI machines run other suites beside it) and reports the time.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { ok, spawnServer, tempDir } from '../helpers/server.ts';

describe('the sandbox demo market', () => {
  it('shows BTC and ETH instruments with two-sided books and trades soon after starting', async (t) => {
    const dataDir = tempDir();
    // the entry point of `npm start`, with the sandbox defaults: simulated index, demo maker on
    const child = await spawnServer(dataDir, { STRIKEBOOK_DEMO_MAKER: '1', STRIKEBOOK_INDEX_FEED: 'simulated' });
    const started = Date.now();
    try {
      const seen = { BTC: { instruments: 0, twoSided: 0, trades: 0 }, ETH: { instruments: 0, twoSided: 0, trades: 0 } };
      const done = () => Object.values(seen).every((s) => s.instruments > 0 && s.twoSided > 0 && s.trades > 0);
      while (!done() && Date.now() - started < 30_000) {
        for (const currency of ['BTC', 'ETH'] as const) {
          seen[currency].instruments = (await ok(child.url, 'public/get_instruments', { currency })).length;
          const summaries = await ok(child.url, 'public/get_book_summary_by_currency', { currency, kind: 'option' });
          seen[currency].twoSided = summaries.filter((s: any) => s.bid_price !== null && s.ask_price !== null && s.bid_price < s.ask_price).length;
          seen[currency].trades = (await ok(child.url, 'public/get_last_trades_by_currency', { currency, count: 10 })).trades.length;
        }
        if (!done()) await new Promise((r) => setTimeout(r, 250));
      }
      const elapsed = Date.now() - started;
      assert.ok(done(), `after ${elapsed} ms: ${JSON.stringify(seen)}`);
      t.diagnostic(`books and trades in both currencies ${elapsed} ms after the server answered`);
      // the books are the maker's: a two-sided book of a quoted series, bids below asks, around the mark
      const summaries = await ok(child.url, 'public/get_book_summary_by_currency', { currency: 'BTC' });
      const quoted = summaries.find((s: any) => s.bid_price !== null && s.ask_price !== null);
      const book = await ok(child.url, 'public/get_order_book', { instrument_name: quoted.instrument_name });
      assert.ok(book.bids.length > 0 && book.asks.length > 0);
      assert.ok(book.best_bid_price < book.best_ask_price);
    } finally {
      child.proc.kill('SIGKILL');
      await child.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
