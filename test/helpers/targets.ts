// Where the WebSocket stream tests (test/ws/*.test.ts) run: against the engine process itself, and
// through a stream gateway (a leader on PostgreSQL publishing to NATS JetStream, one gateway in
// front of it, src/gateway/). Each file runs its tests once per target, with the same assertions:
// HTTP calls go to the leader, WebSocket clients connect to the target's `ws` URL.
//
// The gateway target needs PostgreSQL (STRIKEBOOK_TEST_DATABASE_URL) and NATS
// (STRIKEBOOK_TEST_NATS_URL); when either is unreachable its tests are skipped with the reason,
// never passed in silence. STRIKEBOOK_WS_TARGETS=engine (or gateway) runs one target only.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { startGateway, type RunningGateway } from '../../src/gateway/gateway.ts';
import { startServer, tempDir, type TestServer } from './server.ts';
import { TEST_DATABASE_URL, withSettings } from './postgres.ts';
import { TEST_NATS_URL } from './nats.ts';

export type TargetKind = 'engine' | 'gateway';

export interface TargetSpec {
  kind: TargetKind;
  /** the describe() name */
  name: string;
  /** why this target's tests are skipped, or false */
  skip: string | false;
}

export interface Target {
  kind: TargetKind;
  /** The engine (leader) server: HTTP calls and its counters. */
  srv: TestServer;
  /** Base URL the WebSocket clients connect to (the engine's or the gateway's). */
  ws: string;
  gw: RunningGateway | null;
  /** Open client WebSocket connections of the target (the engine's, or the gateway's). */
  connections(): number;
  /** Client connections cut for passing their send-buffer bound. */
  overflows(): number;
  /** Stops the engine and starts it again on the same data (and port: the gateway's leader URL). */
  restart(): Promise<TestServer>;
  stop(): Promise<void>;
}

async function gatewayUnavailable(): Promise<string | false> {
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 3_000 });
  db.on('error', () => undefined);
  try {
    await db.connect();
  } catch (e) {
    return `PostgreSQL not reachable at ${TEST_DATABASE_URL}: ${e instanceof Error ? e.message : String(e)}`;
  } finally {
    await db.end().catch(() => undefined);
  }
  try {
    const nc = await connect({ servers: TEST_NATS_URL, timeout: 2000, maxReconnectAttempts: 0 });
    await nc.close();
  } catch (e) {
    return `NATS not reachable at ${TEST_NATS_URL}: ${e instanceof Error ? e.message : String(e)}`;
  }
  return false;
}

/** The targets of this run (the gateway's skip reason found once, at load). */
export async function wsTargets(): Promise<TargetSpec[]> {
  const only = process.env.STRIKEBOOK_WS_TARGETS;
  const out: TargetSpec[] = [];
  if (!only || only === 'engine') out.push({ kind: 'engine', name: 'against the engine', skip: false });
  if (!only || only === 'gateway') {
    const why = await gatewayUnavailable();
    if (why) console.log(`# gateway target skipped: ${why}`);
    out.push({ kind: 'gateway', name: 'through a gateway (leader on PostgreSQL + NATS JetStream)', skip: why });
  }
  return out;
}

/** Starts `kind` with the engine settings `env` (the gateway takes the WebSocket ones it shares). */
export async function startTarget(kind: TargetKind, env: Record<string, string> = {}): Promise<Target> {
  if (kind === 'engine') {
    let srv = await startServer(env);
    return {
      kind,
      get srv() {
        return srv;
      },
      // a restarted engine listens on another port
      get ws() {
        return srv.url;
      },
      gw: null,
      connections: () => srv.app.ws.connections,
      overflows: () => srv.app.ws.overflows,
      async restart() {
        const dir = srv.dataDir;
        await srv.stop({ keepData: true });
        srv = await startServer(env, dir);
        return srv;
      },
      stop: () => srv.stop(),
    };
  }
  const tag = randomBytes(5).toString('hex');
  const schema = `strikebook_ws_${tag}`;
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  admin.on('error', () => undefined);
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  const stream = `SBWS_${tag}`;
  const prefix = `sbws_${tag}`;
  const leaderEnv = { ...env, DATABASE_URL: withSettings(TEST_DATABASE_URL, { search_path: schema }), NATS_URL: TEST_NATS_URL, STRIKEBOOK_NATS_STREAM: stream, STRIKEBOOK_NATS_SUBJECT_PREFIX: prefix };
  let srv = await startServer(leaderEnv);
  const port = new URL(srv.url).port;
  const gw = await startGateway({
    leaderUrl: srv.url,
    natsUrl: TEST_NATS_URL,
    stream,
    prefix,
    port: 0,
    host: '127.0.0.1',
    log: pino({ level: 'silent' }),
    ...(env.STRIKEBOOK_WS_MAX_BUFFERED ? { maxBufferedBytes: Number(env.STRIKEBOOK_WS_MAX_BUFFERED) } : {}),
    ...(env.STRIKEBOOK_WS_MIN_HEARTBEAT ? { minHeartbeatSec: Number(env.STRIKEBOOK_WS_MIN_HEARTBEAT) } : {}),
    ...(env.STRIKEBOOK_GATEWAY_RECHECK_MS ? { recheckMs: Number(env.STRIKEBOOK_GATEWAY_RECHECK_MS) } : {}),
  });
  return {
    kind,
    get srv() {
      return srv;
    },
    ws: gw.url,
    gw,
    connections: () => gw.connections,
    overflows: () => gw.overflows,
    async restart() {
      await srv.stop();
      srv = await startServer({ ...leaderEnv, PORT: port }, tempDir());
      return srv;
    },
    async stop() {
      await gw.close();
      await srv.stop();
      const nc = await connect({ servers: TEST_NATS_URL, timeout: 2000, maxReconnectAttempts: 0 }).catch(() => null);
      if (nc) {
        await (await jetstreamManager(nc)).streams.delete(stream).catch(() => undefined);
        await nc.close();
      }
      await admin.query(`DROP SCHEMA ${schema} CASCADE`).catch(() => undefined);
      await admin.end();
    },
  };
}
