// The SIGKILL loop of the all-or-nothing tests (a multi-leg or multi-account operation killed in
// flight): a server on a fresh data directory, killed a few milliseconds after the first answer of a
// burst, restarted on the same directory, its recovered state hash compared with a clean replay of
// the journal. Each test keeps its own burst and its own check of what must be whole.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { cleanReplay, type Replay } from './replay.ts';
import { login, ok, spawnServer, tempDir, type ChildServer } from './server.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The server under test; `child` is replaced at each restart. */
export interface Crashable {
  readonly dataDir: string;
  readonly env: Record<string, string>;
  child: ChildServer;
  readonly url: string;
}

/**
 * Runs `body` with a server spawned on a fresh data directory; afterwards kills whatever process is
 * left and removes the directory, whether the body passed or not.
 */
export async function withCrashServer(env: Record<string, string>, body: (s: Crashable) => Promise<void>): Promise<void> {
  const dataDir = tempDir();
  const s: Crashable = {
    dataDir,
    env,
    child: await spawnServer(dataDir, env),
    get url() {
      return this.child.url;
    },
  };
  try {
    await body(s);
  } finally {
    if (s.child.proc.exitCode === null && s.child.proc.signalCode === null) {
      s.child.proc.kill('SIGKILL');
      await s.child.exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/**
 * SIGKILLs the server `delayMs` after the first of `inFlight` settles (none of them awaited beyond
 * that), restarts it on the same data directory, and asserts that its state hash equals a clean
 * replay of the journal up to the same sequence number. Returns that replay for the test's checks.
 */
export async function killAndRecover(s: Crashable, inFlight: Promise<unknown>[], delayMs: number): Promise<Replay> {
  await Promise.race(inFlight);
  await sleep(delayMs);
  s.child.proc.kill('SIGKILL');
  await s.child.exited;
  s.child = await spawnServer(s.dataDir, s.env);
  const admin = await login(s.url, 'admin@example.com', 'admin-password-1');
  const h = await ok(s.url, 'private/get_state_hash', {}, admin);
  const replay = cleanReplay(s.dataDir, h.seq);
  assert.deepEqual(replay.errors, []);
  assert.equal(h.state_hash, replay.hash, `recovered state differs from a clean replay at seq ${h.seq}`);
  return replay;
}

/** Stops the server with SIGTERM (it must exit 0) and returns a clean replay of the whole journal. */
export async function stopAndReplay(s: Crashable): Promise<Replay> {
  s.child.proc.kill('SIGTERM');
  assert.equal(await s.child.exited, 0);
  return cleanReplay(s.dataDir);
}
