// Metrics for the runbook's alerts (deploy/prometheus/alerts.yml): which build runs, and how old
// each currency's index is (a venues feed with too few fresh sources stops printing, and trading in
// that currency stops once the index is older than the engine's staleness bound).
import { Gauge, type Registry } from 'prom-client';
import type { Exchange } from '../engine/exchange.ts';
import { BUILD_INFO } from './buildInfo.ts';
import { indexSourcesOf } from './indexFeeds.ts';

export function opsMetrics(register: Registry, ex: Exchange, now: () => number): void {
  new Gauge({
    name: 'strikebook_build_info',
    help: 'Always 1; the labels say which build this server runs.',
    labelNames: ['version', 'node'],
    registers: [register],
    collect() {
      this.set({ version: BUILD_INFO.version, node: BUILD_INFO.node }, 1);
    },
  });
  new Gauge({
    name: 'strikebook_index_age_seconds',
    help: "Seconds since each currency's last index print (by the exchange clock); a feed's index (manual 0) older than 30 s stops trading.",
    labelNames: ['currency', 'manual'],
    registers: [register],
    collect() {
      this.reset();
      const t = now();
      for (const [currency, idx] of Object.entries(ex.index)) if (idx !== undefined) this.set({ currency, manual: idx.manual ? '1' : '0' }, Math.max(0, t - idx.ts) / 1000);
    },
  });
  new Gauge({
    name: 'strikebook_index_source_fresh',
    help: 'Venues index (STRIKEBOOK_INDEX_FEED=venues): 1 while a source has a price younger than STRIKEBOOK_INDEX_MAX_AGE_MS, else 0.',
    labelNames: ['venue', 'currency'],
    registers: [register],
    collect() {
      this.reset();
      for (const s of indexSourcesOf.get(ex)?.() ?? []) this.set({ venue: s.venue, currency: s.currency }, s.fresh ? 1 : 0);
    },
  });
}
