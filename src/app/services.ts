// Composition root: opens storage, recovers the engine (snapshot + journal replay), wires the
// sequencer, the market feeds and timers, and the HTTP server.
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { buildHttpServer } from '../api/http/server.ts';
import { DEFAULT_WS_OPTIONS, attachWebSocket, type WsTransport } from '../api/ws/server.ts';
import { allMethods } from '../api/methods/index.ts';
import { randomToken } from '../auth/crypto.ts';
import { SERVER_KEY_META, SIGNATURE_WINDOW_MS, loadServerKey } from '../auth/apiKeys.ts';
import { ReplayGuard } from '../auth/replayGuard.ts';
import { LoginThrottle } from '../auth/loginThrottle.ts';
import { loadCredits, reloadCreditOverrides } from './creditSettings.ts';
import type { CreditLimiter } from './credits.ts';
import type { CurrencyCode } from '../domain/currency.ts';
import type { Command, Sequenced } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { serialize } from '../engine/snapshot.ts';
import { scanForLiquidation } from '../engine/liquidation.ts';
import { codSweep } from '../engine/cod.ts';
import { instrumentFields, listingsFor, loadCatalogConfig, type CatalogConfig } from '../market/catalog.ts';
import { Sequencer, type Clock } from '../sequencer/sequencer.ts';
import { TestClock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import { RateLimiter } from './rateLimiter.ts';
import { runInTurns } from './turns.ts';
import { startIndexFeeds } from './indexFeeds.ts';
import { startDemoMaker } from './demoMaker.ts';
import { createMetrics, type EngineWork, type Metrics } from './metrics.ts';
import { BackgroundSnapshots } from './backgroundSnapshots.ts';
import { snapshotAtStop } from './plannedStop.ts';
import { MarketViews } from '../views/marketViews.ts';
import { openStorage, type JournalHandles, type OpenedStorage } from './storage.ts';
import { DEFAULT_READ_LIMITS, configureReads } from '../api/reads/sharedReads.ts';
import { DiskGuard } from './diskGuard.ts';
import { startNatsEvents, type NatsEvents } from './natsEvents.ts';
import { LEADER_URL_META, awaitMeta } from './standby.ts';
import { newHaState, type HaState } from './haStatus.ts';
import { stepDown } from './leadership.ts';
import { shutdownExchange, type ShutdownOptions } from './shutdown.ts';
import { walletDue } from '../wallet/wallet.ts';
import { nextRfqDue } from '../blockrfq/engine.ts';

export { recover, recoverAsync } from './recovery.ts';
export type { JournalHandles } from './storage.ts';

/** The longest slice of the liquidation scan in one event-loop turn, ms. */
const SCAN_SLICE_MS = 1;

/** How long a standby waits for a starting leader to write the API-key server key. */
const SERVER_KEY_WAIT_MS = 60_000;

export type { HaState } from './haStatus.ts';

export interface Services {
  config: Config;
  ex: Exchange;
  seq: Sequencer;
  clock: Clock;
  testClock: TestClock | null;
  log: Logger;
  limiter: RateLimiter;
  /** Credit rate limits per user, API key and IP (src/app/credits.ts). */
  credits: CreditLimiter;
  /** Failed-login back-off per (email, client) and per email for unknown clients. */
  loginThrottle: LoginThrottle;
  /** Signatures already used (deri-hmac-sha256, client_signature): each is accepted once. */
  replay: ReplayGuard;
  catalog: CatalogConfig;
  /** Token for the first create_admin; null once an administrator exists. */
  bootstrapToken: string | null;
  onAdminCreated(): void;
  /** Key that encrypts API-key secrets at rest (src/auth/apiKeys.ts); kept in the journal's meta table. */
  serverKey: Buffer;
  /** Market data read models (mark history, volumes), rebuilt during recovery's replay. */
  views: MarketViews;
  /** Prometheus metrics of this exchange (src/app/metrics.ts), served at GET /metrics. */
  metrics: Metrics;
  /** How due snapshots are taken: inline while the state is small, else off this thread. */
  snapshots: BackgroundSnapshots;
  /** The free-disk floor on the data directory (null with PostgreSQL): below it, new risk is refused. */
  disk: DiskGuard | null;
  /** Leader or standby, and a standby's follower (/health, /ready, refusals of writes). */
  ha: HaState;
  /** Runs the time-driven market work now (settlement, order expiry, listings); set_test_time uses it. */
  marketTick?: () => Promise<void>;
}

/**
 * A started exchange. Its journal fields depend on the storage (`storage: 'sqlite'` has `journal`
 * and `journalWriter`, `storage: 'postgres'` has `journal`): narrow on `storage` to reach them.
 */
export type RunningExchange = RunningExchangeBase & JournalHandles;

interface RunningExchangeBase {
  services: Services;
  http: FastifyInstance;
  /** Where the HTTP server listens, e.g. http://127.0.0.1:8080 */
  url: string;
  /** The WebSocket transport and its stream hub (API.md 1.3, 6). */
  ws: WsTransport;
  /** Answers what is in flight, stops timers and HTTP, writes what is pending, closes the journal (src/app/shutdown.ts). Idempotent. */
  close(opts?: ShutdownOptions): Promise<void>;
}

export function createLogger(config: Config): Logger {
  return pino({
    level: config.logLevel,
    // secrets never reach the log, whatever object is logged
    redact: {
      paths: ['databaseUrl', '*.databaseUrl', 'password', '*.password', 'access_token', '*.access_token', 'refresh_token', '*.refresh_token', 'client_secret', '*.client_secret', 'authorization', '*.authorization', '*.headers.authorization'],
      censor: '[redacted]',
    },
  });
}

export async function startExchange(config: Config, log: Logger = createLogger(config)): Promise<RunningExchange> {
  const onCommandError = (err: unknown, cmd: Sequenced) => log.error({ err, seq: cmd.seq, t: cmd.t }, 'command failed with an internal error');
  const views = new MarketViews();
  // opens the journal named by the config and recovers from it; cleans up after itself on failure
  // set below, once the storage says which role this server starts in
  let ha: HaState | null = null;
  // a server that is being closed ends its lease itself: a renewal that fails on the closing
  // connection is no lost lease, and must not exit the process (70) a second later
  let closeStarted = false;
  const storage: OpenedStorage = await openStorage(config, log, onCommandError, views, (err) => {
    if (!closeStarted) stepDown(err, log, ha);
  });
  const { ex, replayed, snapshotBytes } = storage;
  let seq: Sequencer | null = null;
  let stopSnapshots: (() => Promise<void>) | null = null;
  let timers: { ready: Promise<void>; stop(): void } | null = null;
  const standby = storage.role === 'standby';
  let http: FastifyInstance | null = null;
  let ws: WsTransport | null = null;
  let stopDisk: () => void = () => undefined;
  let nats: NatsEvents | null = null;
  try {
    const testClock = config.testClock ? new TestClock(config.testStart) : null;
    // a test clock moved ahead before a restart resumes where the journal left it
    testClock?.resumeFrom(ex.now);
    const clock: Clock = testClock ?? systemClock;
    // read at scrape time, once HTTP serves: by then `snapshots` below exists
    const disk = config.databaseUrl === null && (config.diskFloorBytes ?? 0) > 0 ? new DiskGuard(config.dataDir, config.diskFloorBytes!, config.diskCheckMs ?? 5_000, log) : null;
    await disk?.start();
    stopDisk = () => disk?.stop();
    const metrics = createMetrics({
      ex,
      wsConnections: () => ws?.connections ?? 0,
      snapshots: () => snapshots.counts,
      diskLow: () => disk?.low ?? false,
      ha: () => {
        const st = services.ha.role === 'standby' ? services.ha.follower?.status() : undefined;
        return st === undefined ? { leader: true, lagRecords: 0, lagSeconds: 0 } : { leader: false, lagRecords: st.leaderSeq - st.appliedSeq, lagSeconds: st.lagMs / 1000 };
      },
      nats: () => nats?.counts ?? null,
      now: () => clock.now(),
      lease: () => (services.ha.role === 'leader' ? services.ha.lease() : null),
    });
    const catalog = loadCatalogConfig(config.catalogPath ?? undefined);
    const sequencer = new Sequencer(
      ex,
      storage.writer,
      clock,
      {
        snapshotEvery: config.snapshotEvery,
        recordsSinceSnapshot: replayed,
        onFatal: (err) => {
          // DESIGN rule 3: a failed fsync is fatal; recovery on restart restores a consistent state
          log.fatal({ err }, 'journal write failed; stopping');
          process.exit(70);
        },
        onCommandError,
        // live streams: rendered from the state a batch left when it is sealed, written only once
        // it is durable (src/api/ws/hub.ts)
        onSealed: (cmds) => {
          const started = performance.now();
          ws?.hub.onSealed(cmds);
          metrics.work('stream_fanout', (performance.now() - started) / 1000);
        },
        onCommitted: (cmds, seconds, followed) => {
          // a standby applies the leader's batches: it wrote no journal batch of its own
          if (!followed) {
            metrics.committed(cmds, seconds);
            services.ha.lastCommitAt = performance.now();
          }
          const started = performance.now();
          ws?.hub.onCommitted(cmds);
          metrics.work('stream_fanout', (performance.now() - started) / 1000);
        },
        onSnapshotError: (err) => log.error({ err }, 'snapshot failed; recovery replays the journal from the previous one'),
        snapshotDue: (durableSeq) => snapshots.due(durableSeq),
      },
      () => timed(metrics, 'snapshot_inline', () => serialize(ex)),
    );
    seq = sequencer;
    // a standby sequences nothing: writes are refused naming the leader, records come from its journal
    const follower = storage.follower;
    if (standby && follower !== null) sequencer.becomeStandby({ leaderUrl: () => follower.leaderUrl() });
    const snapshots: BackgroundSnapshots = new BackgroundSnapshots(sequencer, {
      dataDir: config.dataDir,
      databaseUrl: config.databaseUrl,
      inlineMaxBytes: config.snapshotInlineMaxBytes,
      lastBytes: snapshotBytes,
      ex,
      log,
    });
    stopSnapshots = () => snapshots.close();

    const services: Services = {
      config,
      ex,
      seq: sequencer,
      clock,
      testClock,
      log,
      limiter: new RateLimiter(() => clock.now()),
      loginThrottle: new LoginThrottle(() => clock.now()),
      credits: await loadCredits(config, storage.meta, () => clock.now()),
      replay: new ReplayGuard(SIGNATURE_WINDOW_MS, config.signatureReplayMax, config.signatureReplayPerKey),
      catalog,
      bootstrapToken: null,
      // a standby cannot write the key: it waits for the leader's (written once, at its first start)
      serverKey: await (standby ? awaitMeta(storage.meta, SERVER_KEY_META, SERVER_KEY_WAIT_MS).then(() => loadServerKey(storage.meta)) : loadServerKey(storage.meta)),
      views,
      metrics,
      snapshots,
      disk,
      ha: (ha = newHaState(standby ? 'standby' : 'leader', follower, () => (storage.handles.storage === 'postgres' ? storage.handles.journal.lease() : null))),
      onAdminCreated() {
        services.bootstrapToken = null;
      },
    };
    configureReads(ex, {
      cacheBytes: config.readCacheBytes ?? DEFAULT_READ_LIMITS.cacheBytes,
      heavyPerTurn: config.heavyReadsPerTurn ?? DEFAULT_READ_LIMITS.heavyPerTurn,
    });
    if (!ex.hasAdmin()) services.bootstrapToken = config.bootstrapToken ?? randomToken(24);

    // Only now, with recovery complete, may commands of our own (index, listings) be sequenced;
    // a standby starts them when it takes over.
    if (!standby) {
      // before the first client connects: the connections of the process before are all gone
      await sweepCod(services);
      timers = startLeaderWork(services);
      await timers.ready;
    }

    http = buildHttpServer(services, allMethods);
    ws = attachWebSocket(services, http.server, allMethods, {
      ...DEFAULT_WS_OPTIONS,
      maxBufferedBytes: config.wsMaxBufferedBytes ?? DEFAULT_WS_OPTIONS.maxBufferedBytes,
      minHeartbeatSec: config.wsMinHeartbeatSec ?? DEFAULT_WS_OPTIONS.minHeartbeatSec,
      maxConnectionsPerIp: config.wsMaxConnectionsPerIp ?? DEFAULT_WS_OPTIONS.maxConnectionsPerIp,
      maxQueuedRequests: config.wsMaxQueuedRequests ?? DEFAULT_WS_OPTIONS.maxQueuedRequests,
      idleTimeoutMs: config.wsIdleTimeoutMs ?? DEFAULT_WS_OPTIONS.idleTimeoutMs,
      credentialSweepMs: config.wsCredentialSweepMs ?? DEFAULT_WS_OPTIONS.credentialSweepMs,
    });
    const wsTransport = ws;
    // a released round's writes after its first piece (in onCommitted, timed above) run a slice per
    // turn: each slice is a piece of the same engine work
    ws.hub.onSlice = (seconds) => metrics.work('stream_fanout', seconds);
    // only the leader publishes; a standby renders what it follows, for a takeover (src/app/natsEvents.ts)
    nats = startNatsEvents(config, log, ex, ws.hub, () => sequencer.isStandby);
    const address = await http.listen({ port: config.port, host: config.host });
    const url = address.replace('[::1]', '127.0.0.1');
    const advertised = config.advertisedUrl ?? url;
    // standbys name the leader in their refusals of writes (docs/api-notes.md, "Standby")
    if (!standby && storage.handles.storage === 'postgres') await storage.meta.setMeta(LEADER_URL_META, advertised);
    const server = http;
    let closing: Promise<void> | null = null;
    const running: RunningExchange = {
      services,
      http: server,
      url,
      ...storage.handles,
      ws: wsTransport,
      close(opts) {
        closeStarted = true;
        closing ??= shutdownExchange(
          {
            follower: storage.follower,
            ws: wsTransport,
            http: server,
            stopTimers() {
              timers?.stop();
              stopDisk();
            },
            sequencer,
            // the last batches' events, if NATS takes them soon (a backlog left is lost: docs/operations.md);
            // a snapshot being built is saved if it finishes soon, before the journal closes
            // then the snapshot of the planned stop, with the read models: a restart replays nothing
            after: [
              async () => await nats?.close(),
              () => snapshots.close(),
              async () => {
                await snapshotAtStop({ sequencer, views, meta: storage.meta, log }).catch((err: unknown) => log.error({ err }, 'snapshot at stop failed; the next start replays the journal'));
              },
              () => storage.close(),
            ],
          },
          opts,
        );
        return closing;
      },
    };
    if (standby && follower !== null) {
      // the takeover: the follower resolves once this server holds the writer lock and has applied
      // every record the old leader committed; from then on it sequences commands itself
      void follower.run(sequencer).then(
        async (journal) => {
          if (journal === null || closing !== null) {
            await journal?.close();
            return;
          }
          await storage.promote(journal);
          sequencer.promote(journal);
          // in the same turn as promote(): sequenced before any client's command can be
          const swept = sweepCod(services);
          nats?.promoted();
          Object.assign(running, storage.handles);
          testClock?.resumeFrom(ex.now);
          await journal.setMeta(LEADER_URL_META, advertised);
          // rate-limit overrides an administrator set on the old leader
          await reloadCreditOverrides(services.credits, journal);
          services.ha.role = 'leader';
          services.ha.tookOverAt = performance.now();
          // a shutdown that began during the takeover has stopped the timers already: none to start
          if (closing !== null) return;
          timers = startLeaderWork(services);
          await swept;
          await timers.ready;
          log.info({ seq: ex.seq, url: advertised }, 'took over as the leader');
        },
        (err: unknown) => {
          // a takeover cut short by this server's own close (its journal closed under it) is no failure
          if (closeStarted) return log.warn({ err }, 'standby: takeover ended by the close');
          log.fatal({ err }, 'standby: the takeover failed; stopping');
          process.exit(70);
        },
      );
    }
    return running;
  } catch (err) {
    // A failed start (port taken, bad catalog, ...) must not leave the database open.
    timers?.stop();
    stopDisk();
    await ws?.close();
    await http?.close().catch(() => undefined);
    await seq?.stop(); // writes what the start already applied, before the journal closes under it
    await nats?.close(0);
    await stopSnapshots?.();
    await storage.close();
    throw err;
  }
}

/**
 * Cancel-on-disconnect for the connections of the process before (a crash, a stop, a takeover):
 * none is open any more, so every order one of them placed with COD on (marked in the engine,
 * src/engine/cod.ts) is cancelled now, as their close would have, by journaled `cancel_orders`.
 * Submitted synchronously (applied at once); the promise is their durability.
 */
function sweepCod(s: Services): Promise<unknown> {
  const cmds = codSweep(s.ex);
  if (cmds.length > 0) s.log.info({ users: cmds.length, orders: cmds.reduce((n, c) => n + c.orderIds.length, 0) }, 'cancel-on-disconnect: cancelling the orders of connections the previous process held');
  return Promise.all(cmds.map((c) => s.seq.submit(c, (r) => r))).catch((err: unknown) => s.log.error({ err }, 'cancel-on-disconnect sweep failed'));
}

/** What only the leader runs: the market timers (index, listings, expiry, liquidation) and the demo maker. */
function startLeaderWork(services: Services): { ready: Promise<void>; stop(): void } {
  const marketTimers = startMarketTimers(services);
  if (!services.config.demoMaker) return marketTimers;
  // the sandbox demo market: an ordinary account quoting around the mark (src/app/demoMaker.ts)
  // after the first listing: it quotes the instruments the market timers list
  let maker: ReturnType<typeof startDemoMaker> | null = null;
  let stopped = false;
  const ready = marketTimers.ready.then(async () => {
    if (stopped) return;
    maker = startDemoMaker(services);
    await maker.ready;
  });
  return {
    ready,
    stop() {
      stopped = true;
      maker?.stop();
      marketTimers.stop();
    },
  };
}

/** Runs `fn`, counting how long it held the engine thread in strikebook_engine_work_seconds. */
function timed<R>(metrics: Metrics, kind: EngineWork, fn: () => R): R {
  const started = performance.now();
  try {
    return fn();
  } finally {
    metrics.work(kind, (performance.now() - started) / 1000);
  }
}

/** Index feeds, listings and order expiry: each a command through the sequencer. */
function startMarketTimers(s: Services): { ready: Promise<void>; stop(): void } {
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
