// The `venues` index (docs/operations.md, "The index"): spot prices of public venues, each read
// from its documented public ticker, combined as the median of the fresh ones. Pure: the poller in
// src/app/venueFeed.ts does the I/O and passes the time in; prints enter the engine as journaled
// `index` commands like the simulated feed's.

/** The venues with an adapter below (STRIKEBOOK_INDEX_SOURCES names them). */
export const VENUE_NAMES = ['coinbase', 'kraken', 'bitstamp', 'binance'] as const;

export type Venue = (typeof VENUE_NAMES)[number];

/** One configured source: a venue, at its public API or at `baseUrl` (a proxy, a test server). */
export interface IndexSourceSpec {
  venue: Venue;
  baseUrl: string | null;
}

/** A venue's price of one currency against the dollar, and the venue's own time of it when it says. */
export interface TickerPrice {
  price: number;
  /** The venue's timestamp of the price (ms), or null when its ticker has none. */
  at: number | null;
}

export interface VenueAdapter {
  defaultBaseUrl: string;
  /** Path and query of the ticker of `currency`/USD (Binance: /USDT, its dollar book). */
  tickerPath(currency: string): string;
  /** The price in a ticker's parsed JSON, or null when the body is not the documented shape. */
  parse(body: unknown): TickerPrice | null;
}

/** A decimal text or number that is a finite positive price, else null. */
function priceOf(v: unknown): number | null {
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  if (typeof v === 'string' && !/^\d+(\.\d+)?$/.test(v)) return null;
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? n : null;
}

function obj(v: unknown): Record<string, unknown> | null {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

function tp(price: number | null, at: number | null): TickerPrice | null {
  return price === null ? null : { price, at: at !== null && Number.isFinite(at) ? at : null };
}

export const ADAPTERS: Record<Venue, VenueAdapter> = {
  // Coinbase Exchange: GET /products/BTC-USD/ticker -> {"price":"...","time":"2026-...Z",...}
  coinbase: {
    defaultBaseUrl: 'https://api.exchange.coinbase.com',
    tickerPath: (c) => `/products/${c}-USD/ticker`,
    parse(body) {
      const o = obj(body);
      if (o === null) return null;
      return tp(priceOf(o.price), typeof o.time === 'string' ? Date.parse(o.time) : null);
    },
  },
  // Kraken: GET /0/public/Ticker?pair=XBTUSD -> {"error":[],"result":{"XXBTZUSD":{"c":["<last>","<volume>"],...}}}
  kraken: {
    defaultBaseUrl: 'https://api.kraken.com',
    tickerPath: (c) => `/0/public/Ticker?pair=${c === 'BTC' ? 'XBT' : c}USD`,
    parse(body) {
      const o = obj(body);
      if (o === null || !Array.isArray(o.error) || o.error.length > 0) return null;
      const result = obj(o.result);
      const pairs = result === null ? [] : Object.values(result);
      if (pairs.length !== 1) return null;
      const last = obj(pairs[0])?.c;
      return Array.isArray(last) ? tp(priceOf(last[0]), null) : null;
    },
  },
  // Bitstamp: GET /api/v2/ticker/btcusd/ -> {"last":"...","timestamp":"<unix seconds>",...}
  bitstamp: {
    defaultBaseUrl: 'https://www.bitstamp.net',
    tickerPath: (c) => `/api/v2/ticker/${c.toLowerCase()}usd/`,
    parse(body) {
      const o = obj(body);
      if (o === null) return null;
      const ts = typeof o.timestamp === 'string' && /^\d+$/.test(o.timestamp) ? Number(o.timestamp) * 1000 : null;
      return tp(priceOf(o.last), ts);
    },
  },
  // Binance: GET /api/v3/ticker/price?symbol=BTCUSDT -> {"symbol":"BTCUSDT","price":"..."}
  binance: {
    defaultBaseUrl: 'https://api.binance.com',
    tickerPath: (c) => `/api/v3/ticker/price?symbol=${c}USDT`,
    parse(body) {
      const o = obj(body);
      if (o === null) return null;
      return tp(priceOf(o.price), null);
    },
  },
};

/** The URL of `currency`'s ticker at source `s`. */
export function tickerUrl(s: IndexSourceSpec, currency: string): string {
  const a = ADAPTERS[s.venue];
  return (s.baseUrl ?? a.defaultBaseUrl) + a.tickerPath(currency);
}

/** What a source last read for one currency: its last good price and when it was observed (ms). */
export interface SourceReading {
  venue: Venue;
  price: number;
  observedAt: number;
}

export interface IndexRules {
  /** A reading older than this is stale and left out. */
  maxAgeMs: number;
  /** Fewer fresh readings than this and there is no index. */
  minSources: number;
}

export interface IndexResult {
  /** The median of the fresh readings rounded to cents, or null when too few are fresh. */
  price: number | null;
  fresh: Venue[];
  stale: Venue[];
}

/**
 * The index of one currency at `now`: the median of the readings observed within `maxAgeMs`
 * (the mean of the middle two for an even count), rounded to cents; null with fewer than
 * `minSources` fresh ones. A median needs a majority of the sources to move to move itself, so one
 * venue's bad print or frozen book does not carry the index.
 */
export function medianIndex(readings: readonly (SourceReading | null)[], now: number, rules: IndexRules): IndexResult {
  const fresh: SourceReading[] = [];
  const stale: Venue[] = [];
  for (const r of readings) {
    if (r === null) continue;
    if (now - r.observedAt <= rules.maxAgeMs) fresh.push(r);
    else stale.push(r.venue);
  }
  const venues = fresh.map((r) => r.venue);
  if (fresh.length < rules.minSources || fresh.length === 0) return { price: null, fresh: venues, stale };
  const prices = fresh.map((r) => r.price).sort((a, b) => a - b);
  const mid = prices.length >> 1;
  const median = prices.length % 2 === 1 ? prices[mid] : (prices[mid - 1] + prices[mid]) / 2;
  return { price: Math.max(0.01, Math.round(median * 100) / 100), fresh: venues, stale };
}

/**
 * When a venue's price was observed: when its answer came, or the venue's own time of the price if
 * that is earlier (a ticker that answers but stopped trading is as stale as one that does not answer).
 */
export function observedAt(received: number, venueAt: number | null): number {
  return venueAt === null || venueAt > received ? received : venueAt;
}
