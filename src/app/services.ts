// Composition root: opens storage, recovers the engine (snapshot + journal replay), wires the
// sequencer, the market feeds and timers (marketTimers.ts), and the HTTP server.
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
import type { Sequenced } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { serialize } from '../engine/snapshot.ts';
import { codSweep } from '../engine/cod.ts';
import { loadCatalogConfig, type CatalogConfig } from '../market/catalog.ts';
import { Sequencer, type Clock } from '../sequencer/sequencer.ts';
import { TestClock, systemClock } from './clock.ts';
import type { Config } from './config.ts';
import { RateLimiter } from './rateLimiter.ts';
import { startDemoMaker } from './demoMaker.ts';
import { startMarketTimers } from './marketTimers.ts';
import { createMetrics, timed, type Metrics } from './metrics.ts';
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

export { recover, recoverAsync } from './recovery.ts';
export type { JournalHandles } from './storage.ts';

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
    // the writer thread's own share of each commit (SQLite; PostgreSQL's write is the whole commit)
    if (storage.handles.storage === 'sqlite') storage.handles.journalWriter.onAppendWritten = (seconds) => metrics.journalWritten(seconds);
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
          if (journal !== null && closing === null) {
            // rate-limit overrides an administrator set on the old leader, read before the first
            // command is accepted so none is judged by stale limits
            await reloadCreditOverrides(services.credits, journal);
          }
          if (journal === null || closing !== null) {
            await journal?.close();
            return;
          }
          await storage.promote(journal);
          sequencer.promote(journal);
          // in the same turn as promote(): sequenced before any client's command can be, and /health,
          // /ready and the leader metric say 'leader' from the first accepted command on
          const swept = sweepCod(services);
          services.ha.role = 'leader';
          services.ha.tookOverAt = performance.now();
          nats?.promoted();
          Object.assign(running, storage.handles);
          testClock?.resumeFrom(ex.now);
          await journal.setMeta(LEADER_URL_META, advertised);
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
