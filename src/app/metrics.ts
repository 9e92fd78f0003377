// Prometheus metrics (DESIGN "Quality habits"), served at GET /metrics (src/api/http/server.ts).
// Each started exchange has its own registry, so that several exchanges in one process (the tests)
// count separately; the process metrics (CPU, memory, event loop lag, GC) describe the process and
// live in one process-wide registry, because prom-client's collectors cannot be stopped: one per
// exchange would leave a GC observer and an event loop timer behind for every exchange started.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Command } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import type { SnapshotCounts } from './backgroundSnapshots.ts';
import { gcWithin, watchGcPauses } from './gcPauses.ts';
import { LatencySeries, histogramText } from './latencyHistogram.ts';
import { loopStalls } from './loopStalls.ts';
import { opsMetrics } from './opsMetrics.ts';
import type { NatsEventStats } from './natsEvents.ts';
import type { LeaseStatus } from '../journal/postgresJournal.ts';

export interface MetricSources {
  ex: Exchange;
  /** Open WebSocket connections; 0 before the transport is attached. */
  wsConnections(): number;
  /** Snapshots taken since start, by how (src/app/backgroundSnapshots.ts). */
  snapshots(): SnapshotCounts;
  /** Free disk below the floor (src/app/diskGuard.ts). */
  diskLow?(): boolean;
  /** The NATS event publisher's counts (src/app/natsEvents.ts); absent without NATS_URL. */
  nats?(): NatsEventStats | null;
  /** Leader or hot standby, and a standby's lag (src/app/standby.ts); absent: always the leader. */
  ha?(): { leader: boolean; lagRecords: number; lagSeconds: number };
  /** The exchange clock (index age); absent: the wall clock. */
  now?(): number;
  /** The leadership lease the leader writes under (PostgreSQL; src/journal/leaseKeeper.ts); null without one. */
  lease?(): LeaseStatus | null;
}

export interface Metrics {
  /** Counts one registry call that succeeded and how long it took, its journal write included. */
  callOk(method: string, seconds: number): void;
  /** Counts one registry call answered with JSON-RPC error `code`. */
  callFailed(method: string, code: number): void;
  /** The sequencer's onCommitted: one durable batch, its commands and how long its write took. */
  committed(cmds: readonly Command[], seconds: number): void;
  /** One batch's write on the journal's writer thread alone (SQLite: WorkerJournalWriter.onAppendWritten). */
  journalWritten(seconds: number): void;
  /** Times one piece of the engine thread's own work that is not a client's call (index ticks,
   *  liquidation scan slices, listings, stream fan-out): where a stall comes from. Called as the
   *  piece ends; a GC pause inside it is left out of its time (see `heldPieces`). */
  work(kind: EngineWork, seconds: number): void;
  /** The exposition: this exchange's metrics and the process metrics. */
  text(): Promise<string>;
  readonly contentType: string;
}

/** The engine thread's own work, timed per piece (strikebook_engine_work_seconds{work}). */
export type EngineWork = 'market_tick' | 'liquidation_scan_slice' | 'listing' | 'stream_fanout' | 'snapshot_inline';

/** Runs `fn`, counting how long it held the engine thread in strikebook_engine_work_seconds. */
export function timed<R>(metrics: Metrics, kind: EngineWork, fn: () => R): R {
  const started = performance.now();
  try {
    return fn();
  } finally {
    metrics.work(kind, (performance.now() - started) / 1000);
  }
}

/** One (method, outcome) series: a plain number on the request path, published at scrape time. */
interface Cell {
  labels: { method: string; outcome: string };
  n: number;
}

interface MethodCells {
  ok: Cell;
  failed: Map<number, Cell>;
  /** How long its successful calls took. */
  durations: LatencySeries;
}

let processRegistry: Registry | null = null;

function processMetrics(): Registry {
  if (processRegistry === null) {
    processRegistry = new Registry();
    // prom-client's default GC buckets (1, 10, 100 ms...) cannot tell a pause under issue 16's 2 ms
    // line from one over it; these match the engine's latency buckets below 250 ms
    collectDefaultMetrics({ register: processRegistry, gcDurationBuckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1] });
  }
  return processRegistry;
}

/** The NATS event publisher's backlog and counts; none without NATS_URL. */
function natsMetrics(register: Registry, read: () => NatsEventStats | null): void {
  const gauge = (name: string, help: string, value: (n: NatsEventStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [register],
      collect() {
        const n = read();
        if (n !== null) this.set(value(n));
      },
    });
  const counter = (name: string, help: string, value: (n: NatsEventStats) => number) =>
    new Counter({
      name,
      help,
      registers: [register],
      collect() {
        const n = read();
        this.reset();
        if (n !== null) this.inc(value(n));
      },
    });
  gauge('strikebook_nats_backlog', 'Event messages waiting to be published to NATS JetStream (bounded by STRIKEBOOK_NATS_BACKLOG_MAX).', (n) => n.backlog);
  gauge('strikebook_nats_connected', '1 while the event publisher is connected to NATS.', (n) => (n.connected ? 1 : 0));
  counter('strikebook_nats_published_total', 'Event messages acknowledged by JetStream.', (n) => n.published);
  counter('strikebook_nats_republished_total', "Messages of an old leader's batches a new leader published after its takeover (the stream lacked them).", (n) => n.republished);
  counter('strikebook_nats_dropped_total', 'Event messages dropped because the backlog was full.', (n) => n.dropped);
  counter('strikebook_nats_gaps_total', 'Runs of dropped batches (each announced on <prefix>.control.gap).', (n) => n.gaps);
}

/** Engine-work pieces longer than this (ms) wait for their GC pauses to be known before counting. */
const HOLD_OVER_MS = 1;
/** How long they wait (ms): GC entries come a turn or so after their pause. */
const HOLD_MS = 50;
/** Held pieces counted at once when this many wait (bounds the list). */
const HELD_PIECES_MAX = 256;

export function createMetrics(src: MetricSources): Metrics {
  const register = new Registry();
  const shared = processMetrics();
  const { ex } = src;
  opsMetrics(register, ex, src.now ?? (() => Date.now()));

  // prom-client's labelled child costs ~140 ns per inc() (it hashes the labels every time); a cached
  // cell is a Map lookup and an increment (~5 ns), copied into the counter when scraped
  const calls = new Map<string, MethodCells>();
  const cell = (method: string, outcome: string): Cell => ({ labels: { method, outcome }, n: 0 });
  const cellsOf = (method: string): MethodCells => {
    let c = calls.get(method);
    if (c === undefined) {
      c = { ok: cell(method, 'ok'), failed: new Map(), durations: new LatencySeries(`method="${method}"`) };
      calls.set(method, c);
    }
    return c;
  };
  new Counter({
    name: 'strikebook_rpc_requests_total',
    help: 'Registry method calls (HTTP and WebSocket) by method and outcome: ok or the JSON-RPC error code.',
    labelNames: ['method', 'outcome'],
    registers: [register],
    collect() {
      this.reset();
      for (const c of calls.values()) {
        if (c.ok.n > 0) this.inc(c.ok.labels, c.ok.n);
        for (const f of c.failed.values()) this.inc(f.labels, f.n);
      }
    },
  });

  const batches = new Counter({ name: 'strikebook_journal_batches_total', help: 'Journal batches made durable (group commits).', registers: [register] });
  const commitDurations = new LatencySeries('');
  const writeDurations = new LatencySeries('');
  const workSeries = new Map<EngineWork, LatencySeries>();
  const workSeriesOf = (kind: EngineWork): LatencySeries => {
    let w = workSeries.get(kind);
    if (w === undefined) {
      w = new LatencySeries(`work="${kind}"`);
      workSeries.set(kind, w);
    }
    return w;
  };
  const gcInWork = new Counter({
    name: 'strikebook_engine_work_gc_seconds_total',
    help: "GC pauses that fell inside pieces of the engine thread's own work, by kind: left out of strikebook_engine_work_seconds.",
    labelNames: ['work'],
    registers: [register],
  });
  const gcPiecesInWork = new Counter({
    name: 'strikebook_engine_work_pieces_with_gc_total',
    help: 'Pieces of the engine thread\'s own work with a GC pause inside, by kind.',
    labelNames: ['work'],
    registers: [register],
  });
  // Pieces over HOLD_OVER_MS wait until the GC pauses of their time are known (the observer's
  // entries come a turn or more later), then count without them. Shorter ones count at once.
  watchGcPauses();
  const heldPieces: Array<{ kind: EngineWork; start: number; end: number }> = [];
  let heldTimer: ReturnType<typeof setTimeout> | null = null;
  const countHeld = (): void => {
    if (heldTimer !== null) clearTimeout(heldTimer);
    heldTimer = null;
    for (const p of heldPieces.splice(0)) {
      const gc = gcWithin(p.start, p.end);
      workSeriesOf(p.kind).observe(Math.max(0, p.end - p.start - gc) / 1000);
      if (gc > 0) {
        gcInWork.inc({ work: p.kind }, gc / 1000);
        gcPiecesInWork.inc({ work: p.kind });
      }
    }
  };
  const stalls = loopStalls();
  const records = new Counter({ name: 'strikebook_journal_records_total', help: 'Commands made durable in the journal.', registers: [register] });

  new Gauge({
    name: 'strikebook_journal_seq',
    help: 'Sequence number of the last command applied.',
    registers: [register],
    collect() {
      this.set(ex.seq);
    },
  });
  new Gauge({
    name: 'strikebook_disk_low',
    help: '1 while free disk on the data directory is below STRIKEBOOK_DISK_FLOOR_BYTES and new risk is refused.',
    registers: [register],
    collect() {
      this.set(src.diskLow?.() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'strikebook_leader',
    help: '1 on the leader (the server that sequences commands), 0 on a hot standby (docs/operations.md).',
    registers: [register],
    collect() {
      this.set(src.ha?.().leader === false ? 0 : 1);
    },
  });
  new Gauge({
    name: 'strikebook_lease_held',
    help: '1 while this leader holds its leadership lease and may answer (PostgreSQL; docs/operations.md "Leadership lease"), 0 past its renew deadline or without a lease.',
    registers: [register],
    collect() {
      this.set(src.lease?.()?.held ? 1 : 0);
    },
  });
  new Gauge({
    name: 'strikebook_lease_age_seconds',
    help: 'Since the last renewal of the leadership lease that succeeded was sent (near the renew interval while all is well; 0 without a lease).',
    registers: [register],
    collect() {
      this.set((src.lease?.()?.ageMs ?? 0) / 1000);
    },
  });
  new Gauge({
    name: 'strikebook_lease_term',
    help: 'The term of the leadership lease this leader writes under (one more at each takeover; 0 without a lease).',
    registers: [register],
    collect() {
      this.set(src.lease?.()?.term ?? 0);
    },
  });
  new Gauge({
    name: 'strikebook_standby_lag_records',
    help: "Journal records the leader committed that this standby has not applied yet (0 on the leader).",
    registers: [register],
    collect() {
      this.set(src.ha?.().lagRecords ?? 0);
    },
  });
  new Gauge({
    name: 'strikebook_standby_lag_seconds',
    help: 'How long this standby has been behind the leader (0 when caught up, and on the leader).',
    registers: [register],
    collect() {
      this.set(src.ha?.().lagSeconds ?? 0);
    },
  });
  new Gauge({
    name: 'strikebook_users',
    help: 'Accounts, administrators included.',
    registers: [register],
    collect() {
      this.set(ex.users.size);
    },
  });
  new Gauge({
    name: 'strikebook_open_orders',
    help: 'Orders resting in the books.',
    registers: [register],
    collect() {
      let open = 0;
      for (const u of ex.users.values()) open += u.openOrderCount;
      this.set(open);
    },
  });
  new Gauge({
    name: 'strikebook_instruments',
    help: 'Listed instruments by state.',
    labelNames: ['state'],
    registers: [register],
    collect() {
      const counts = { open: 0, settlement: 0, delivered: 0 };
      for (const inst of ex.instruments.values()) counts[inst.state]++;
      for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
    },
  });
  new Counter({
    name: 'strikebook_snapshots_total',
    help: 'Snapshots since start by how they were taken: inline (engine thread), background, or failed.',
    labelNames: ['how'],
    registers: [register],
    collect() {
      this.reset();
      const counts = src.snapshots();
      for (const how of ['inline', 'background', 'failed'] as const) this.inc({ how }, counts[how]);
    },
  });
  natsMetrics(register, () => src.nats?.() ?? null);
  new Gauge({
    name: 'strikebook_ws_connections',
    help: 'Open WebSocket connections.',
    registers: [register],
    collect() {
      this.set(src.wsConnections());
    },
  });

  return {
    callOk(method, seconds) {
      const c = cellsOf(method);
      c.ok.n++;
      c.durations.observe(seconds);
    },
    callFailed(method, code) {
      const failed = cellsOf(method).failed;
      let c = failed.get(code);
      if (c === undefined) {
        c = cell(method, String(code));
        failed.set(code, c);
      }
      c.n++;
    },
    committed(cmds, seconds) {
      batches.inc();
      records.inc(cmds.length);
      commitDurations.observe(seconds);
    },
    journalWritten(seconds) {
      writeDurations.observe(seconds);
    },
    work(kind, seconds) {
      const ms = seconds * 1000;
      if (ms <= HOLD_OVER_MS) {
        workSeriesOf(kind).observe(seconds);
        return;
      }
      const end = performance.now();
      heldPieces.push({ kind, start: end - ms, end });
      if (heldPieces.length >= HELD_PIECES_MAX) countHeld();
      else if (heldTimer === null) {
        heldTimer = setTimeout(countHeld, HOLD_MS);
        heldTimer.unref();
      }
    },
    async text() {
      countHeld();
      const [own, proc] = await Promise.all([register.metrics(), shared.metrics()]);
      const latencies =
        histogramText(
          'strikebook_rpc_duration_seconds',
          'Successful registry calls by method, from the start of the call to its result; for commands, the wait for their journal batch included.',
          [...calls.values()].map((c) => c.durations),
        ) +
        histogramText('strikebook_journal_commit_seconds', 'Journal batches, from hand-over to the writer until durable.', [commitDurations]) +
        histogramText(
          'strikebook_journal_write_seconds',
          "Journal batches on the writer thread alone (SQLite): from the batch's arrival there to the end of its commit, fsync included. The rest of strikebook_journal_commit_seconds is the hand-over between the threads.",
          [writeDurations],
        ) +
        histogramText('strikebook_engine_work_seconds', "The engine thread's own work by kind, each piece timed from start to end within one turn, GC pauses inside it left out (strikebook_engine_work_gc_seconds_total).", workSeries.values()) +
        histogramText(
          'strikebook_event_loop_delay_seconds',
          'How late a timer due every 2 ms fired: a stall of the engine thread (work that did not yield, or GC, or the thread descheduled by the OS) of D seconds shows as a delay of D. Process-wide.',
          [stalls.delay],
        ) +
        histogramText(
          'strikebook_event_loop_busy_seconds',
          "The same delays, each bounded by the process's CPU time in its sampling interval: the part of a stall spent working or collecting garbage, not waiting for a core. Process-wide.",
          [stalls.busy],
        );
      return `${own}\n${latencies}\n${proc}`;
    },
    contentType: register.contentType,
  };
}

/** Whether a socket's remote address is this host (IPv4, IPv6 or IPv4-mapped IPv6 loopback). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || address.startsWith('127.') || address.startsWith('::ffff:127.');
}
