// The `venues` index against fake venues on loopback (test/helpers/venues.ts): polled with a
// timeout, the median of the fresh sources, a failing, hanging or stale source left out, no print
// with too few fresh; and in a started exchange, its prints are journaled index commands.
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { VenueFeed } from '../../src/app/venueFeed.ts';
import { ok, startServer } from '../helpers/server.ts';
import { fakeVenue, sourcesSetting, type FakeVenue } from '../helpers/venues.ts';

const silent = pino({ level: 'silent' });

/** Polls `cond` until it holds; the deadline is a bound for a broken feed, not a speed judgment. */
async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.fail(`not within ${ms} ms: ${what}`);
}

async function threeVenues(): Promise<FakeVenue[]> {
  return [await fakeVenue('coinbase', { BTC: 100_000, ETH: 4000 }), await fakeVenue('kraken', { BTC: 100_100, ETH: 4010 }), await fakeVenue('bitstamp', { BTC: 100_300, ETH: 4030 })];
}

describe('VenueFeed', () => {
  const venues: FakeVenue[] = [];
  after(() => Promise.all(venues.map((v) => v.close())));

  it('reads every venue once at start and gives the median per currency', async () => {
    venues.push(...(await threeVenues()));
    const feed = new VenueFeed({ sources: venues.map((v) => ({ venue: v.venue, baseUrl: v.url })), currencies: ['BTC', 'ETH'], minSources: 2, maxAgeMs: 10_000, pollMs: 60_000, timeoutMs: 2_000, log: silent });
    await feed.start();
    try {
      assert.equal(feed.price('BTC'), 100_100);
      assert.equal(feed.price('ETH'), 4010);
      assert.deepEqual(
        feed.status().map((s) => [s.venue, s.currency, s.price, s.error]),
        [
          ['coinbase', 'BTC', 100_000, null],
          ['kraken', 'BTC', 100_100, null],
          ['bitstamp', 'BTC', 100_300, null],
          ['coinbase', 'ETH', 4000, null],
          ['kraken', 'ETH', 4010, null],
          ['bitstamp', 'ETH', 4030, null],
        ],
      );
    } finally {
      feed.stop();
    }
  });

  it('leaves out a source that fails, times out or stops trading, and has no index with too few fresh', async () => {
    const [cb, kr, bs] = await threeVenues();
    venues.push(cb, kr, bs);
    let now = Date.now();
    const feed = new VenueFeed({ sources: [cb, kr, bs].map((v) => ({ venue: v.venue, baseUrl: v.url })), currencies: ['BTC'], minSources: 2, maxAgeMs: 5_000, pollMs: 100, timeoutMs: 300, log: silent, now: () => now });
    await feed.start();
    try {
      assert.equal(feed.price('BTC'), 100_100);
      // bitstamp answers with a price its own clock dates a minute back: stale, left out
      bs.venueTime = Date.now() - 60_000;
      bs.prices.BTC = 50_000;
      kr.mode = 'hang';
      // kraken's last good price ages out while it hangs (each request times out after 300 ms)
      const krRequests = kr.requests;
      await until('kraken asked again and timing out', () => kr.requests > krRequests + 1);
      await until('bitstamp read again', () => feed.status().find((s) => s.venue === 'bitstamp')!.price === 50_000);
      assert.match(feed.status().find((s) => s.venue === 'kraken')!.error ?? '', /no answer within 300 ms/);
      // six seconds on: coinbase, read every 100 ms, is fresh again at once; the others are not
      now += 6_000;
      await until('coinbase read again', () => feed.index('BTC').fresh.includes('coinbase'));
      assert.deepEqual(feed.index('BTC'), { price: null, fresh: ['coinbase'], stale: ['kraken', 'bitstamp'] }, 'one fresh source of the two required: no index');
      kr.mode = 'ok';
      kr.prices.BTC = 100_200;
      await until('kraken back', () => feed.price('BTC') === 100_100, 30_000);
      cb.mode = 'error';
      await until('coinbase failing', () => feed.status().find((s) => s.venue === 'coinbase')!.error === 'HTTP 503');
      cb.mode = 'garbage';
      await until('coinbase answering garbage', () => feed.status().find((s) => s.venue === 'coinbase')!.error === 'not the documented ticker shape');
      now += 6_000;
      await until('kraken read again', () => feed.index('BTC').fresh.includes('kraken'));
      assert.deepEqual(feed.index('BTC'), { price: null, fresh: ['kraken'], stale: ['coinbase', 'bitstamp'] }, 'coinbase and bitstamp stale: one fresh source');
    } finally {
      feed.stop();
    }
  });
});

describe('an exchange on the venues index', () => {
  it('prints the median of its venues as journaled index commands, and stops printing when too few are fresh', { timeout: 120_000 }, async () => {
    const venues = await threeVenues();
    const env = {
      STRIKEBOOK_INDEX_FEED: 'venues',
      STRIKEBOOK_INDEX_SOURCES: sourcesSetting(venues),
      STRIKEBOOK_INDEX_POLL_MS: '200',
      // above a second: Bitstamp dates its ticker in whole seconds
      STRIKEBOOK_INDEX_MAX_AGE_MS: '3000',
    };
    let server = await startServer(env);
    try {
      // the first round is printed before the server listens, and the catalog is listed around it
      const ex = server.app.services.ex;
      assert.deepEqual([ex.index.BTC?.price, ex.index.BTC?.manual, ex.index.ETH?.price], [100_100, false, 4010]);
      assert.ok([...ex.instruments.values()].some((i) => i.currency === 'BTC'), 'series listed around the venue index');
      // the API reports the median of the three (a poll answered late on a busy start may leave one
      // out for a moment: the median of two is printed, then the three again)
      await until('get_index_price at the median of three', async () => (await ok(server.url, 'public/get_index_price', { index_name: 'btc_usd' })).index_price === 100_100);
      const fresh = async (venue: string) => Number(new RegExp(`strikebook_index_source_fresh\\{venue="${venue}",currency="BTC"\\} (\\d)`).exec(await (await fetch(`${server.url}/metrics`)).text())?.[1]);
      // every venue answers: each is reported fresh (a loaded machine may take a poll or two to say so)
      await until('every venue reported fresh', async () => [await fresh('coinbase'), await fresh('kraken'), await fresh('bitstamp')].every((f) => f === 1));
      venues[1].prices.BTC = 100_200;
      await until('the new median printed', () => ex.index.BTC?.price === 100_200);
      // two of three venues down: their last prices age out (3 s), then nothing is printed
      venues[0].mode = 'error';
      venues[1].mode = 'error';
      let stalled = false;
      await until('the prints stop', async () => {
        const ts = ex.index.BTC!.ts;
        await new Promise((r) => setTimeout(r, 1_500));
        stalled = ex.index.BTC!.ts === ts;
        return stalled;
      });
      const last = { ...ex.index.BTC! };
      // whatever the one fresh venue says now, no print follows
      venues[2].prices.BTC = 100_250;
      await until('bitstamp read again', () => venues[2].requests > 0 && ex.index.BTC !== undefined);
      await new Promise((r) => setTimeout(r, 2_500));
      assert.deepEqual([ex.index.BTC!.price, ex.index.BTC!.ts], [last.price, last.ts], 'no index from one fresh source');
      assert.equal(await ok(server.url, 'public/get_index_price', { index_name: 'btc_usd' }).then((r) => r.index_price), last.price);
      const kept = last.price;
      assert.deepEqual([await fresh('coinbase'), await fresh('kraken'), await fresh('bitstamp')], [0, 0, 1], 'the metrics say which sources are stale');
      // the prints were commands in the journal: a restart on the manual feed recovers the last one
      const dir = server.dataDir;
      await server.stop({ keepData: true });
      server = await startServer({}, dir);
      assert.equal(server.app.services.ex.index.BTC?.price, kept);
    } finally {
      await server.stop();
      await Promise.all(venues.map((v) => v.close()));
    }
  });
});
