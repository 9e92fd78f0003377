// Fake public venues on loopback for the `venues` index (src/market/venueIndex.ts): each answers its
// venue's documented ticker JSON for the prices a test sets, or fails the way a test asks.
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Venue } from '../../src/market/venueIndex.ts';

export type VenueMode = 'ok' | 'error' | 'hang' | 'garbage';

export interface FakeVenue {
  venue: Venue;
  url: string;
  /** Prices by currency code (BTC, ETH). */
  prices: Record<string, number>;
  mode: VenueMode;
  /** The venue's own timestamp of its price (ms), where its ticker has one; null: now. */
  venueTime: number | null;
  /** Requests answered so far. */
  requests: number;
  close(): Promise<void>;
}

function ticker(venue: Venue, currency: string, price: number, at: number): unknown {
  const p = price.toFixed(2);
  switch (venue) {
    case 'coinbase':
      return { ask: p, bid: p, volume: '1234.5', trade_id: 1, price: p, size: '0.01', time: new Date(at).toISOString() };
    case 'kraken':
      return { error: [], result: { [currency === 'BTC' ? 'XXBTZUSD' : `X${currency}ZUSD`]: { a: [p, '1', '1.000'], b: [p, '1', '1.000'], c: [p, '0.01'], v: ['1', '2'] } } };
    case 'bitstamp':
      return { high: p, last: p, timestamp: String(Math.floor(at / 1000)), bid: p, ask: p, volume: '10' };
    case 'binance':
      return { symbol: `${currency}USDT`, price: price.toFixed(8) };
  }
}

/** Which currency a request names, per venue's path shape; null when it is not a ticker path. */
function currencyOf(venue: Venue, url: string): string | null {
  const m =
    venue === 'coinbase'
      ? /^\/products\/([A-Z]+)-USD\/ticker$/.exec(url)
      : venue === 'kraken'
        ? /^\/0\/public\/Ticker\?pair=([A-Z]+)USD$/.exec(url)
        : venue === 'bitstamp'
          ? /^\/api\/v2\/ticker\/([a-z]+)usd\/$/.exec(url)
          : /^\/api\/v3\/ticker\/price\?symbol=([A-Z]+)USDT$/.exec(url);
  if (!m) return null;
  const c = m[1].toUpperCase();
  return c === 'XBT' ? 'BTC' : c;
}

export async function fakeVenue(venue: Venue, prices: Record<string, number>): Promise<FakeVenue> {
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    fake.requests++;
    if (fake.mode === 'hang') {
      hanging.add(res);
      return;
    }
    if (fake.mode === 'error') {
      res.writeHead(503).end('{"message":"service unavailable"}');
      return;
    }
    if (fake.mode === 'garbage') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"unexpected":true}');
      return;
    }
    const currency = currencyOf(venue, req.url ?? '');
    const price = currency === null ? undefined : fake.prices[currency];
    if (currency === null || price === undefined) {
      res.writeHead(404).end('{"message":"not found"}');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ticker(venue, currency, price, fake.venueTime ?? Date.now())));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const fake: FakeVenue = {
    venue,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    prices: { ...prices },
    mode: 'ok',
    venueTime: null,
    requests: 0,
    close: () =>
      new Promise<void>((r) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
  return fake;
}

/** STRIKEBOOK_INDEX_SOURCES naming `venues` at their loopback URLs. */
export function sourcesSetting(venues: readonly FakeVenue[]): string {
  return venues.map((v) => `${v.venue}=${v.url}`).join(',');
}
