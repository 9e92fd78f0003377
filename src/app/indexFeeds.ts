// The index feed the market timers run (STRIKEBOOK_INDEX_FEED): the seeded simulation, the admin's
// manual prices, or the median of public venues. Whatever the source, a price enters the engine as a
// journaled `index` command sequenced by the market timers (src/app/marketTimers.ts), so a replay sees
// the same prints and the engine does no I/O.
import type { Logger } from 'pino';
import type { CurrencyCode } from '../domain/currency.ts';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { CatalogConfig } from '../market/catalog.ts';
import { SimulatedIndex } from '../market/indexFeed.ts';
import type { Config } from './config.ts';
import { VenueFeed, type SourceStatus } from './venueFeed.ts';

type IndexCommand = Extract<Command, { t: 'index' }>;

export interface IndexFeeds {
  /** Prints sequenced at once when the leader starts, before anything else it sequences. */
  initial(): IndexCommand[];
  /** Prints sequenced once the feed has had its first look at its sources (venues: one poll round). */
  warm(): Promise<IndexCommand[]>;
  /** One market second: a step per currency, each run in its own turn; null prints nothing. */
  steps(dtMs: number): Array<() => IndexCommand | null>;
  /** The venues' sources (empty for the other feeds), for /health. */
  sources(): SourceStatus[];
  stop(): void;
}

/**
 * The venues of a running venues feed, by the exchange it feeds: read by /metrics
 * (src/app/opsMetrics.ts) without a path through the composition root.
 */
export const indexSourcesOf = new WeakMap<Exchange, () => Array<SourceStatus & { fresh: boolean }>>();

const print = (currency: CurrencyCode, price: number): IndexCommand => ({ t: 'index', currency, price, manual: false, by: null });

export function startIndexFeeds(config: Config, catalog: CatalogConfig, ex: Exchange, log: Logger): IndexFeeds {
  if (config.indexFeed === 'venues') return venueFeeds(config, catalog, ex, log);
  const simulated = new Map<CurrencyCode, SimulatedIndex>();
  const initial: IndexCommand[] = [];
  for (const cc of catalog.currencies) {
    const idx = ex.index[cc.currency];
    if (config.indexFeed === 'simulated') {
      const start = idx?.price ?? cc.initialIndex;
      simulated.set(cc.currency, new SimulatedIndex(config.indexSeed + cc.currency.charCodeAt(0), start, config.indexAnnualVol));
      initial.push(print(cc.currency, start));
    } else if (!idx) {
      initial.push({ t: 'index', currency: cc.currency, price: cc.initialIndex, manual: true, by: null });
    }
  }
  return {
    initial: () => initial,
    warm: () => Promise.resolve([]),
    steps: (dtMs) => [...simulated].map(([currency, feed]) => () => print(currency, feed.next(dtMs))),
    sources: () => [],
    stop() {},
  };
}

function venueFeeds(config: Config, catalog: CatalogConfig, ex: Exchange, log: Logger): IndexFeeds {
  const currencies = catalog.currencies.map((cc) => cc.currency);
  const feed = new VenueFeed({
    sources: config.indexSources,
    currencies,
    minSources: config.indexMinSources,
    maxAgeMs: config.indexMaxAgeMs,
    pollMs: config.indexPollMs,
    timeoutMs: config.indexTimeoutMs,
    log,
  });
  const started = feed.start();
  indexSourcesOf.set(ex, () => feed.status().map((s) => ({ ...s, fresh: s.ageMs !== null && s.ageMs <= config.indexMaxAgeMs })));
  const stale = new Set<CurrencyCode>();
  const now = (currency: CurrencyCode): IndexCommand | null => {
    const r = feed.index(currency);
    // one line when a currency's index goes stale and one when it is back
    if (r.price === null && !stale.has(currency)) {
      stale.add(currency);
      log.error({ currency, fresh: r.fresh, stale: r.stale, minSources: config.indexMinSources }, 'index stale: too few fresh sources; no index print until they are back');
    } else if (r.price !== null && stale.delete(currency)) {
      log.info({ currency, fresh: r.fresh }, 'index sources fresh again');
    }
    return r.price === null ? null : print(currency, r.price);
  };
  return {
    initial: () => [],
    warm: () => started.then(() => currencies.map(now).filter((c): c is IndexCommand => c !== null)),
    steps: () => currencies.map((c) => () => now(c)),
    sources: () => feed.status(),
    stop() {
      feed.stop();
      indexSourcesOf.delete(ex);
    },
  };
}
