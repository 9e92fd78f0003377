// NATS JetStream for tests: the shared server at 127.0.0.1:4222 (STRIKEBOOK_TEST_NATS_URL), with a
// stream name and subject prefix of the test's own (deleted afterwards), or a nats-server of the
// test's own (/usr/sbin/nats-server) that the test stops and starts. When NATS cannot be reached
// the test is skipped with the reason printed, never passed in silence.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { tempDir } from './server.ts';

export const TEST_NATS_URL = process.env.STRIKEBOOK_TEST_NATS_URL || 'nats://127.0.0.1:4222';
export const NATS_SERVER_BIN = process.env.NATS_SERVER_BIN || '/usr/sbin/nats-server';

export interface TestStream {
  url: string;
  stream: string;
  prefix: string;
  /** Env for a server publishing to this stream. */
  env: Record<string, string>;
  nc: NatsConnection;
}

/** A stream of this test's own on the shared NATS; null after skipping `t` when NATS is unreachable. */
export async function freshStream(t: TestContext, url = TEST_NATS_URL): Promise<TestStream | null> {
  let nc: NatsConnection;
  try {
    nc = await connect({ servers: url, timeout: 2000, maxReconnectAttempts: 0 });
  } catch (e) {
    t.skip(`NATS not reachable at ${url}: ${e instanceof Error ? e.message : String(e)}`);
    return null;
  }
  const tag = randomBytes(5).toString('hex');
  const stream = `SBTEST_${tag}`;
  const prefix = `sbtest_${tag}`;
  t.after(async () => {
    try {
      const jsm = await jetstreamManager(nc);
      await jsm.streams.delete(stream).catch(() => undefined);
    } finally {
      await nc.close();
    }
  });
  return { url, stream, prefix, nc, env: { NATS_URL: url, STRIKEBOOK_NATS_STREAM: stream, STRIKEBOOK_NATS_SUBJECT_PREFIX: prefix } };
}

export interface StoredEvent {
  seq: number;
  subject: string;
  data: any;
  msgId: string | undefined;
}

/** Every message in `stream` from stream sequence `from` on (until the last one stored now). */
export async function readStream(nc: NatsConnection, stream: string, from = 1): Promise<StoredEvent[]> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(stream);
  const last = info.state.last_seq;
  const out: StoredEvent[] = [];
  for (let seq = Math.max(from, info.state.first_seq); seq <= last; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq });
    if (m === null) continue;
    out.push({ seq, subject: m.subject, data: m.json(), msgId: m.header.get('Nats-Msg-Id') || undefined });
  }
  return out;
}

export { jetstream, jetstreamManager };

/** Waits until `port` accepts TCP connections (or `ms` passes). */
export async function waitForPort(port: number, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const up = await new Promise<boolean>((resolve) => {
      const s = tcpConnect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (up) return;
    if (Date.now() > until) throw new Error(`port ${port} not listening after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A nats-server with JetStream of the test's own, on `port`, keeping its store across restarts. */
export class OwnNats {
  private proc: ChildProcess | null = null;
  readonly dir = tempDir('strikebook-nats-');

  constructor(readonly port: number) {}

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  static available(t: TestContext): boolean {
    if (existsSync(NATS_SERVER_BIN)) return true;
    t.skip(`${NATS_SERVER_BIN} not installed (apt-get install nats-server)`);
    return false;
  }

  async start(): Promise<void> {
    this.proc = spawn(NATS_SERVER_BIN, ['-js', '-sd', this.dir, '-a', '127.0.0.1', '-p', String(this.port)], { stdio: 'ignore' });
    await waitForPort(this.port);
  }

  /** Stops it (SIGKILL: as a crash) and waits for the process to end. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const ended = new Promise((resolve) => p.once('exit', resolve));
    p.kill('SIGKILL');
    await ended;
    this.proc = null;
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
