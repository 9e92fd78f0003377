// The sandbox's journal stays small (issue 33, round two): the demo market wrote ~300 KB/s
// (~25 GB a day) because every tick resent every ladder the simulated index had nudged, and every
// 30 s every quote, and sandbox kept the whole journal. Now the makers reprice a currency only when
// its index has moved 5 bp, send only the sides whose open quote differs from what they want, and
// sandbox deletes the records behind its two latest snapshots. Measured in journal bytes per
// minute of exchange time (the pinned test clock runs at the wall's pace), so a loaded machine
// only lowers the figure; the ceiling is a twentieth of what the old maker wrote (it writes ~250 KB).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../../src/app/config.ts';
import { ok, sqliteOf, startServer, type TestServer } from '../helpers/server.ts';

/** Journal bytes a minute of the demo market may write: the old maker wrote ~20 MB. */
const CEILING_PER_MINUTE = 1_000_000;

describe('the demo market journal (issue 33)', { timeout: 240_000 }, () => {
  let srv: TestServer;
  before(async () => {
    // sandbox defaults, as `npm start` runs: simulated (moving) index, demo market, retention default
    srv = await startServer({ STRIKEBOOK_DEMO_MAKER: '1', STRIKEBOOK_INDEX_FEED: 'simulated', STRIKEBOOK_JOURNAL_RETENTION: '' });
  });
  after(() => srv?.stop());

  it('writes less than 1 MB a minute of exchange time once the books are up', async (t) => {
    const t0 = (await ok(srv.url, 'public/get_time')) + 20_000; // the first full quote is done by then
    const window = 60_000;
    while ((await ok(srv.url, 'public/get_time')) < t0 + window + 2_000) await new Promise((r) => setTimeout(r, 500));
    const db = sqliteOf(srv.app).journal;
    const rows = [...db.readAfter(0)].filter((r) => r.ts >= t0 && r.ts < t0 + window);
    const bytes = rows.reduce((n, r) => n + r.cmd.length, 0);
    const quotes = rows.filter((r) => r.cmd.startsWith('{"t":"mass_quote"')).length;
    t.diagnostic(`${rows.length} records (${quotes} mass quotes), ${bytes} bytes in ${window / 1000} s of exchange time`);
    assert.ok(rows.length > 0, 'the window has records (the takers trade)');
    assert.ok(bytes < CEILING_PER_MINUTE, `${bytes} journal bytes in a minute of the demo market`);
    // the books are still full: the makers did not go quiet to save bytes
    const summaries = await ok(srv.url, 'public/get_book_summary_by_currency', { currency: 'BTC', kind: 'option' });
    const twoSided = summaries.filter((s: any) => s.bid_price !== null && s.ask_price !== null).length;
    assert.ok(twoSided > summaries.length * 0.9, `${twoSided} of ${summaries.length} BTC series two-sided`);
  });
});

describe('journal retention defaults', () => {
  const base = { STRIKEBOOK_BOOTSTRAP_TOKEN: 'x'.repeat(16), STRIKEBOOK_INDEX_FEED: 'manual' };
  it('sandbox deletes what is behind two snapshots; production keeps everything', () => {
    assert.equal(loadConfig({ ...base }).journalRetention, 'delete');
    assert.equal(loadConfig({ ...base, STRIKEBOOK_MODE: 'production' }).journalRetention, 'keep');
    assert.equal(loadConfig({ ...base, STRIKEBOOK_JOURNAL_RETENTION: 'keep' }).journalRetention, 'keep', 'an explicit setting wins');
  });
  it('snapshots every 20,000 records while the demo market runs, else every 500,000', () => {
    assert.equal(loadConfig({ ...base }).snapshotEvery, 20_000, 'sandbox: the demo market is on by default');
    assert.equal(loadConfig({ ...base, STRIKEBOOK_DEMO_MAKER: '0' }).snapshotEvery, 500_000);
    assert.equal(loadConfig({ ...base, STRIKEBOOK_MODE: 'production' }).snapshotEvery, 500_000);
    assert.equal(loadConfig({ ...base, STRIKEBOOK_SNAPSHOT_EVERY: '7' }).snapshotEvery, 7);
  });
});
