// Snapshots without stopping the engine. Serializing the state on the engine thread stops every
// request for as long as it takes: measured on 2 cores, 275 ms for 135,000 resting orders (22.6 MB)
// and about 400 ms end to end under load, every STRIKEBOOK_SNAPSHOT_EVERY records. So once the
// state is larger than STRIKEBOOK_SNAPSHOT_INLINE_MAX_BYTES, a due snapshot is built by a process of
// its own (snapshotProcess.ts) from what the journal already holds: the latest snapshot, then the
// records up to the due seq, replayed as recovery replays them (the engine is deterministic, so
// this is the state the engine had at that seq). The engine thread only passes the text on to the
// journal's writer, as UTF-8 parts that reach it one message at a time and move on to the writer's
// thread without a copy (src/journal/snapshotParts.ts: as one string, its arrival alone held the
// engine thread ~45 ms at 47 MB). A small state is still serialized inline: a few milliseconds,
// less than starting a process. The process runs at the lowest CPU priority, all of its threads
// (threadPriority.ts): on two cores its seconds of replay, and the collections of its garbage,
// would otherwise take a core from the engine thread.
import type { ChildProcess } from 'node:child_process';
import type { Logger } from 'pino';
import type { Exchange } from '../engine/exchange.ts';
import { startTsProcess } from '../journal/tsWorker.ts';
import { SNAPSHOT_PART_CHARS } from '../journal/workerJournal.ts';
import type { Sequencer } from '../sequencer/sequencer.ts';
import type { SnapshotJob } from './snapshotBuild.ts';
import type { SnapshotMessage } from './snapshotProcess.ts';

type SnapshotOutcome = Exclude<SnapshotMessage, { part: Uint8Array }>;

/** How long close() lets a snapshot in progress finish before it stops the process. */
const FINISH_ON_CLOSE_MS = 3_000;
/** Snapshot text per order or trade the state holds (measured: 22.6 MB for 135,000 orders). */
const ESTIMATED_BYTES_PER_ITEM = 170;

/** The size of a snapshot of `ex`, estimated from the orders and trades it holds. */
export function estimateSnapshotBytes(ex: Exchange): number {
  let items = 0;
  for (const u of ex.users.values()) items += u.orders.size + u.trades.length;
  for (const m of ex.markets.values()) items += m.trades.length;
  return items * ESTIMATED_BYTES_PER_ITEM;
}

export interface SnapshotCounts {
  inline: number;
  background: number;
  failed: number;
}

export interface BackgroundSnapshotsOptions {
  /** Where the journal is (the worker opens it read-only). */
  dataDir: string;
  databaseUrl: string | null;
  /** A state whose last snapshot was smaller than this is serialized on the engine thread (0: never). */
  inlineMaxBytes: number;
  /** The size of the snapshot recovery started from; null without one (then estimated when due). */
  lastBytes: number | null;
  /** The engine, only to estimate the size of a first snapshot. */
  ex: Exchange;
  log: Logger;
  /** The parts the text is handed back in (UTF-16 code units; SNAPSHOT_PART_CHARS by default). */
  partChars?: number;
  /** How long close() lets a snapshot in progress finish (FINISH_ON_CLOSE_MS by default). */
  finishOnCloseMs?: number;
}

export class BackgroundSnapshots {
  readonly counts: SnapshotCounts = { inline: 0, background: 0, failed: 0 };
  /** The CPU priority (nice) the last background snapshot's process ran at (the highest of its
   *  threads'); null when the platform could not lower it. */
  lastProcessNice: number | null = null;
  /** The last snapshot taken since start: its seq, size and exchange time (the admin console's status, via /health). */
  last: { seq: number; bytes: number; at: number } | null = null;
  /** The journal's write of the last snapshot handed to it. */
  private saving: Promise<void> = Promise.resolve();
  private lastBytes: number | null;
  private running: { child: ChildProcess; finished: Promise<void> } | null = null;
  private closed = false;
  /** close() stopped the snapshot in progress: its end is a shutdown, not a failure. */
  private stoppedAtClose = false;

  constructor(
    private readonly sequencer: Sequencer,
    private readonly opts: BackgroundSnapshotsOptions,
  ) {
    this.lastBytes = opts.lastBytes;
  }

  /** The sequencer's `snapshotDue`: a snapshot of the state as of `durableSeq` is due. */
  due(durableSeq: number): void {
    if (this.closed) return;
    if ((this.lastBytes ?? estimateSnapshotBytes(this.opts.ex)) < this.opts.inlineMaxBytes) {
      const taken = this.sequencer.takeSnapshot();
      if (taken !== null) {
        this.lastBytes = taken.bytes;
        this.counts.inline++;
        this.last = { seq: taken.seq, bytes: taken.bytes, at: this.opts.ex.now };
      }
      return;
    }
    // one at a time: a snapshot due while another is being built is the next one's to cover
    if (this.running === null) this.start(durableSeq);
  }

  /** Resolves when no snapshot is being built or saved (for tests). */
  async idle(): Promise<void> {
    while (this.running !== null) await this.running.finished;
    // the journal's writer may still be writing the last one (its own thread)
    await this.saving;
  }

  /** Lets a snapshot in progress finish and be handed to the journal, for a while; then stops it. */
  async close(): Promise<void> {
    this.closed = true;
    const running = this.running;
    if (running === null) return;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), this.opts.finishOnCloseMs ?? FINISH_ON_CLOSE_MS)));
    if ((await Promise.race([running.finished, late])) === 'late') {
      this.opts.log.warn('background snapshot still running at shutdown; stopped (the journal has every record)');
      this.stoppedAtClose = true;
      running.child.kill('SIGKILL');
      await running.finished;
    }
    clearTimeout(timer);
  }

  private start(seq: number): void {
    const started = performance.now();
    const job: SnapshotJob = { dataDir: this.opts.dataDir, databaseUrl: this.opts.databaseUrl, seq, partChars: this.opts.partChars ?? SNAPSHOT_PART_CHARS };
    const child = startTsProcess(new URL('./snapshotProcess.ts', import.meta.url));
    const parts: Uint8Array[] = [];
    let outcome: SnapshotOutcome | null = null;
    child.on('message', (m: SnapshotMessage) => {
      if ('part' in m) {
        parts.push(m.part);
        return;
      }
      outcome = m.ok && m.parts !== null && m.parts !== parts.length ? { ok: false, message: `${parts.length} of the snapshot's ${m.parts} parts arrived` } : m;
      if (outcome.ok && outcome.parts !== null) this.saving = this.sequencer.saveSnapshotParts(outcome.seq, parts);
    });
    child.once('error', (err) => {
      outcome ??= { ok: false, message: err.message };
    });
    const finished = new Promise<void>((resolve) => {
      // 'close', not 'exit': every message it sent has been delivered by then
      child.once('close', (code, signal) => {
        // ended without an answer because close() stopped it: a shutdown, not a failure (a failure
        // it had already reported is still one)
        const stopped = outcome === null && this.stoppedAtClose;
        outcome ??= { ok: false, message: `the snapshot process ended without an answer (${signal ?? `exit code ${code}`})` };
        this.running = null;
        this.finished(seq, outcome, performance.now() - started, stopped);
        resolve();
      });
    });
    child.send(job);
    this.running = { child, finished };
  }

  private finished(seq: number, outcome: SnapshotOutcome | null, ms: number, stopped: boolean): void {
    const log = this.opts.log;
    if (outcome?.ok) {
      this.lastProcessNice = outcome.nice;
      if (outcome.parts !== null) {
        this.lastBytes = outcome.chars;
        this.counts.background++;
        this.last = { seq, bytes: outcome.chars, at: this.opts.ex.now };
        log.info({ seq, bytes: outcome.chars, ms: Math.round(ms), nice: outcome.nice }, 'snapshot built in the background');
      }
      return;
    }
    // stopped by close(), which said so: a failure count or an error here would raise an operator's
    // "snapshot failed" alert on every stop that meets a snapshot in progress
    if (stopped) return;
    // not fatal: recovery replays the journal from the previous snapshot, which is still there
    this.counts.failed++;
    log.error({ seq, reason: outcome?.message ?? 'the process ended without an answer' }, 'background snapshot failed');
  }
}
