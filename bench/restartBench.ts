// Issue 36's restart line: restart to serving with a 1,000,000-record journal and a snapshot every
// 500,000 records, against the same journal's bare read.
//
// The journal: a server in this process (the journal writer thread, as in production) takes a steady
// mix straight through its sequencer (no HTTP, so that building it takes seconds, not minutes): on
// 10 instruments a resting ask and a buy taking the best ask (about one trade per two orders; the
// books stay five asks deep), resting bids low in the band up to 10,000 of them, and an index print
// every 1,000 records. The snapshot is taken at exactly record 500,000 (the default
// STRIKEBOOK_SNAPSHOT_EVERY); the journal ends at record 1,000,000 before the next one is written:
// the most a restart replays with that setting (the 500,000 records after the snapshot).
//
// Restart to serving: `npm start`'s command on that data dir, from the spawn to the first answer of
// /health (it listens once recovery is done). Its reference: a process that starts node, opens the
// same journal and reads every record of it, keeping each (bench/bareRead.ts), from the spawn to its
// exit. Both twice, alternated (bare, server, server, bare); each side's best is judged: <= 3x.
// Printed beside them: the same server started on an empty data dir (node, tsx and the app's own
// start, which no journal changes).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/app/config.ts';
import { MARKET_VIEWS_META } from '../src/app/plannedStop.ts';
import { startExchange, type Services } from '../src/app/services.ts';
import { openSqliteJournal } from '../src/journal/sqliteJournal.ts';
import { recover } from '../src/app/recovery.ts';
import { stateHash } from '../src/engine/snapshot.ts';
import type { Command } from '../src/engine/commands.ts';
import { stepTick } from '../src/domain/instrument.ts';
import { fanoutMarket } from './fanoutMarket.ts';
import { atMost, judgedText, type SectionResult } from './judged.ts';
import { BOOTSTRAP, ROOT, freePort, runIfMain, spawnStrikebook } from './support.ts';

const RECORDS = Number(process.env.BENCH_RESTART_RECORDS || 1_000_000);
const SNAPSHOT_AT = Number(process.env.BENCH_RESTART_SNAPSHOT_EVERY || 500_000);
const TARGET_RATIO = 3;
const RESTING_BIDS = 10_000;
/** Commands submitted before the journal is waited for: the sequencer's batches stay large, memory small. */
const CHUNK = 2_000;

/** Submits the mix through the sequencer until its seq reaches `until`; returns how many failed
 *  (a refused order is still a journal record: the engine saw it). */
async function fill(s: Services, until: number, next: () => Command): Promise<number> {
  let failed = 0;
  while (s.ex.seq < until) {
    let last: Promise<unknown> = Promise.resolve();
    for (let k = 0; k < CHUNK && s.ex.seq < until; k++) last = s.seq.submit(next(), (r) => r).catch(() => failed++);
    await last;
  }
  return failed;
}

/** Builds the journal in `dataDir`; returns the snapshot's seq and the last record's. */
export async function buildJournal(dataDir: string): Promise<{ snapshotSeq: number; lastSeq: number; buildS: number; failed: number; resting: number; liveHash: string }> {
  const t0 = performance.now();
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    STRIKEBOOK_DATA_DIR: dataDir,
    STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP,
    STRIKEBOOK_INDEX_FEED: 'manual',
    STRIKEBOOK_DEMO_MAKER: '0',
    // the one snapshot is taken here, at SNAPSHOT_AT exactly
    STRIKEBOOK_SNAPSHOT_EVERY: '1000000000',
    STRIKEBOOK_JOURNAL_RETENTION: 'keep',
    STRIKEBOOK_RATE_LIMITS: '0',
    LOG_LEVEL: 'silent',
  });
  const app = await startExchange(config, pino({ level: 'silent' }));
  try {
    const s = app.services;
    const { ladders } = await fanoutMarket(s, 10);
    const user = async (email: string) => {
      const u = (await s.seq.submit({ t: 'create_user', email, passwordHash: 'x', role: 'user', inviteCode: null, by: null }, (r) => r)) as { id: number };
      await s.seq.submit({ t: 'deposit', userId: u.id, currency: 'BTC', amount: 1e14, depositId: null, by: u.id }, (r) => r);
      return u.id;
    };
    // an administrator, as a venue has (a server without one prints how to create one at each start)
    await s.seq.submit({ t: 'create_user', email: 'restart-admin@example.com', passwordHash: 'x', role: 'admin', inviteCode: null, by: null }, (r) => r);
    const maker = await user('restart-maker@example.com');
    const taker = await user('restart-taker@example.com');
    const rester = await user('restart-rester@example.com');
    const index = s.ex.indexPrice('BTC');
    const place = (userId: number, side: 0 | 1, instrument: string, price: number, lots: number, tif: 'good_til_cancelled' | 'immediate_or_cancel'): Command => ({
      t: 'place', userId, side, instrument, price, advanced: null, advPrice: null, lots, type: 'limit', tif,
      postOnly: false, rejectPostOnly: false, reduceOnly: false, label: '', clientOrderId: null,
    });
    // resting bids 8 ticks under the standing book's mid, inside the band (fanoutMarket keeps the
    // mid 20 ticks from its edges)
    const lowBid = ladders.map((l) => {
      let p = l.mid;
      for (let k = 0; k < 8; k++) p = stepTick(l.inst, p, -1);
      return p;
    });
    let step = 0;
    let bids = 0;
    const next = (): Command => {
      const n = step++;
      // an index print every 1,000 records, one dollar up or down: the marks move, the bands stay
      if (n % 1000 === 999) return { t: 'index', currency: 'BTC', price: index + (n % 2000 === 999 ? 1 : 0), manual: true, by: null };
      const li = (n >> 1) % ladders.length;
      const l = ladders[li]!;
      const lot = l.inst.lotScaled;
      if (n % 50 === 25 && bids < RESTING_BIDS) {
        bids++;
        return place(rester, 0, l.inst.name, lowBid[li]!, lot, 'good_til_cancelled');
      }
      return n % 2 === 0 ? place(maker, 1, l.inst.name, l.asks[(n >> 1) % l.asks.length]!, lot, 'good_til_cancelled') : place(taker, 0, l.inst.name, l.top, lot, 'immediate_or_cancel');
    };
    let failed = await fill(s, SNAPSHOT_AT, next);
    await s.seq.read(() => undefined);
    const snap = s.seq.takeSnapshot();
    if (snap === null) throw new Error('restart bench: the snapshot was not taken');
    failed += await fill(s, RECORDS, next);
    // the live state at the journal's end, which a recovery from it must reach (issue 36's acceptance)
    const liveHash = await s.seq.read(() => stateHash(s.ex));
    return { snapshotSeq: snap.seq, lastSeq: s.ex.seq, buildS: (performance.now() - t0) / 1000, failed, resting: bids, liveHash };
  } finally {
    await app.close();
    asCrashLeftIt(dataDir, SNAPSHOT_AT);
  }
}

/** The state hash a recovery of `dataDir` reaches: the latest snapshot, then every record after it. */
function recoveredStateHash(dataDir: string): string {
  const journal = openSqliteJournal(dataDir, { readOnly: true });
  try {
    return stateHash(recover(journal).ex);
  } finally {
    journal.close();
  }
}

/**
 * The journal as a crash at its last record leaves it: the snapshot the planned stop just wrote at
 * the end (src/app/plannedStop.ts) and the read models saved with it are removed, so that the
 * latest snapshot is the one at `snapshotSeq` and a restart replays what follows it.
 */
function asCrashLeftIt(dataDir: string, snapshotSeq: number): void {
  const journal = openSqliteJournal(dataDir);
  try {
    const db = journal.connections()[0]!;
    db.transaction(() => {
      db.prepare('DELETE FROM snapshots WHERE seq > ?').run(snapshotSeq);
      db.prepare('DELETE FROM snapshot_parts WHERE seq > ?').run(snapshotSeq);
      db.prepare('DELETE FROM meta WHERE key = ?').run(MARKET_VIEWS_META);
    }).immediate();
  } finally {
    journal.close();
  }
}

/** Spawn to the first /health answer of `npm start`'s command on `dataDir`, ms. */
async function timeToServing(dataDir: string): Promise<number> {
  const port = await freePort();
  const t0 = performance.now();
  // no snapshot and no journal retention of its own: each restart meets the same journal
  const server = spawnStrikebook(port, dataDir, [], { STRIKEBOOK_SNAPSHOT_EVERY: '1000000000', STRIKEBOOK_JOURNAL_RETENTION: 'keep' });
  try {
    const deadline = t0 + 300_000;
    while (performance.now() < deadline) {
      if (server.exitCode !== null) throw new Error(`restart bench: the server exited (${server.exitCode})`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false);
      if (ok) return performance.now() - t0;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('restart bench: the server did not answer /health within 300 s');
  } finally {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGKILL');
    await exited;
  }
}

/**
 * A planned stop, then a restart (issue 36): a server is started on `dataDir` (recovering as above),
 * stopped with SIGTERM, which snapshots the state as of the last record with the market read models
 * (src/app/plannedStop.ts), and started again: that restart replays nothing. Returns the stop's
 * duration (SIGTERM to exit) and the restart's (spawn to the first /health answer), ms.
 */
async function afterPlannedStop(dataDir: string): Promise<{ stopMs: number; restartMs: number }> {
  const port = await freePort();
  const server = spawnStrikebook(port, dataDir, [], { STRIKEBOOK_SNAPSHOT_EVERY: '1000000000', STRIKEBOOK_JOURNAL_RETENTION: 'keep' });
  const exited = new Promise<number | null>((r) => server.once('exit', r));
  while (!(await fetch(`http://127.0.0.1:${port}/health`).then((r) => r.ok, () => false))) {
    if (server.exitCode !== null) throw new Error(`restart bench: the server exited (${server.exitCode})`);
    await new Promise((r) => setTimeout(r, 20));
  }
  const t0 = performance.now();
  server.kill('SIGTERM');
  const code = await exited;
  const stopMs = performance.now() - t0;
  if (code !== 0) throw new Error(`restart bench: the planned stop exited ${code}`);
  return { stopMs, restartMs: await timeToServing(dataDir) };
}

/** Spawn to exit of bench/bareRead.ts on `dataDir`: ms, and the records it kept. */
async function bareRead(dataDir: string): Promise<{ ms: number; records: number; readMs: number }> {
  const t0 = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/bareRead.ts'), dataDir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  const ms = performance.now() - t0;
  if (code !== 0) throw new Error(`restart bench: the bare read exited ${code}`);
  const r = JSON.parse(out) as { records: number; readMs: number };
  return { ms, ...r };
}

export async function runRestartBench(): Promise<SectionResult> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-restart-'));
  const emptyDir = mkdtempSync(path.join(tmpdir(), 'strikebook-restart-empty-'));
  try {
    const built = await buildJournal(dataDir);
    const recoveredHash = recoveredStateHash(dataDir);
    if (recoveredHash !== built.liveHash) throw new Error(`restart bench: a recovery of the journal (snapshot at ${built.snapshotSeq} and the records after it) reached state hash ${recoveredHash}, the live engine ${built.liveHash}`);
    const bare1 = await bareRead(dataDir);
    const restart1 = await timeToServing(dataDir);
    const restart2 = await timeToServing(dataDir);
    const bare2 = await bareRead(dataDir);
    const empty = await timeToServing(emptyDir);
    // last: it writes a snapshot at the journal's end, which the crash-like restarts above must not meet
    const planned = await afterPlannedStop(dataDir);
    const restartMs = Math.min(restart1, restart2);
    const bareMs = Math.min(bare1.ms, bare2.ms);
    const judged = atMost('restart', restartMs, bareMs, 'ms', TARGET_RATIO);
    const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
    return {
      ok: judged.pass,
      judged: [judged],
      lines: [
        `journal: ${built.lastSeq} records, snapshot at ${built.snapshotSeq} (a restart replays the ${built.lastSeq - built.snapshotSeq} after it); built in ${built.buildS.toFixed(1)} s (${built.resting} resting bids placed, ${built.failed} commands failed)`,
        `recovery (the snapshot at ${built.snapshotSeq} and the ${built.lastSeq - built.snapshotSeq} records after it, in-process with recovery's own code) reached the live engine's state hash ${built.liveHash.slice(0, 16)}...`,
        `restart to serving (spawn -> first /health answer): ${s(restart1)}, ${s(restart2)}; the same server on an empty data dir ${s(empty)}`,
        `bare read (spawn -> exit, every record read and kept): ${s(bare1.ms)}, ${s(bare2.ms)} (${bare1.records} records; the read itself ${s(bare1.readMs)}, ${s(bare2.readMs)})`,
        `after a planned stop (SIGTERM: snapshot at the last record with the read models; the stop took ${s(planned.stopMs)}): restart to serving ${s(planned.restartMs)} = ${(planned.restartMs / bareMs).toFixed(2)}x the bare read (printed, not judged: the line is the crash-like restart)`,
        judgedText(judged),
      ],
    };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(emptyDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => runRestartBench());
