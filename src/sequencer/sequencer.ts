// The single writer: validate -> sequence -> apply -> journal -> acknowledge.
//
// Commands are applied to the in-memory engine as they arrive; their journal records are written
// in one transaction per event-loop turn (group commit) and only then are replies released. Reads
// that arrive while a batch is pending wait for it, so nothing is ever visible before it is durable.
// A failed journal write is fatal: the process stops and recovers from the journal on restart.
import type { Command, Sequenced } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { ERR, reject } from '../domain/errors.ts';
import type { Journal, JournalRecord } from '../journal/journal.ts';

export interface Clock {
  now(): number;
}

export interface SequencerOptions {
  /** Take a snapshot after this many journal records since the last one. */
  snapshotEvery: number;
  /** Journal records after the latest snapshot at start (those recovery replayed). Counted so that
   *  a process restarted more often than every `snapshotEvery` records still snapshots. */
  recordsSinceSnapshot?: number;
  /** A journal or snapshot write failed: the caller must stop the process (DESIGN.md rule 3). */
  onFatal: (err: unknown) => void;
  onCommandError: (err: unknown, cmd: Sequenced) => void;
  /** Called after each batch is durable, with the commands it held (for event fan-out). */
  onCommitted?: (cmds: Sequenced[]) => void;
  /** The state could not be serialized for a snapshot (a bug, not fatal: the journal has it all). */
  onSnapshotError?: (err: unknown) => void;
}

interface Batch {
  records: JournalRecord[];
  cmds: Sequenced[];
  resolvers: Array<() => void>;
  done: Promise<void>;
}

/** Applies one command, turning an unexpected exception into an internal error result. Used both
 *  live and in replay, so a buggy command leaves the same state either way. */
export function applyCommand(ex: Exchange, cmd: Sequenced, onError?: (err: unknown, cmd: Sequenced) => void): unknown {
  try {
    return ex.apply(cmd);
  } catch (err) {
    onError?.(err, cmd);
    return reject(ERR.INTERNAL, 'internal_error');
  }
}

export class Sequencer {
  private batch: Batch | null = null;
  private lastSeq: number;
  private lastTs: number;
  private sinceSnapshot = 0;
  private stopped = false;
  /** A journal write failed: the in-memory state holds commands that may not be durable. */
  private failed: unknown = null;

  constructor(
    readonly ex: Exchange,
    private readonly journal: Journal,
    private readonly clock: Clock,
    private readonly opts: SequencerOptions,
    private readonly snapshot: () => string,
  ) {
    this.lastSeq = journal.lastSeq();
    this.lastTs = ex.now;
    this.sinceSnapshot = opts.recordsSinceSnapshot ?? 0;
  }

  /**
   * Sequences and applies a command; `render` turns the engine result into the reply right away
   * (later commands may change live objects), and the reply is released once the record is durable.
   * A `render` that throws (e.g. `unwrap` of a rejection) rejects the reply, also only once durable.
   */
  submit<R>(cmd: Command, render: (result: unknown) => R): Promise<R> {
    if (this.failed !== null) return Promise.reject(new Error('sequencer stopped: journal write failed', { cause: this.failed }));
    if (this.stopped) return Promise.reject(new Error('sequencer stopped'));
    const ts = Math.max(this.clock.now(), this.lastTs);
    const seq = this.lastSeq + 1;
    const sequenced = { ...cmd, ts, seq } as Sequenced;
    // Serialized before anything changes: a command that cannot be journaled is refused whole,
    // without consuming a seq (a consumed seq with no record would break the journal's contiguity).
    const text = JSON.stringify(sequenced);
    this.lastTs = ts;
    this.lastSeq = seq;
    // Applied as replay will apply it, parsed from the journal text: a value JSON does not keep
    // (NaN -> null, undefined dropped, a shared object) cannot make live state and replay differ.
    const journaled = JSON.parse(text) as Sequenced;
    const result = applyCommand(this.ex, journaled, this.opts.onCommandError);
    // The record joins the batch before `render` runs: once applied, a command must be journaled
    // whatever its reply does. (It used to be pushed after render, so every rejected cancel or order,
    // whose render throws via unwrap, left a seq gap and the next append killed the process.)
    const batch = this.openBatch();
    batch.records.push({ seq, ts, cmd: text });
    batch.cmds.push(journaled);
    let reply: R;
    try {
      reply = render(result);
    } catch (err) {
      return batch.done.then(() => Promise.reject(err));
    }
    return batch.done.then(() => reply);
  }

  /**
   * Runs a read once every command applied so far is durable. Waits again if a command was applied
   * while it waited (e.g. submitted by a callback of the same batch), so `fn` never sees state that
   * is not yet on disk.
   */
  read<R>(fn: () => R): Promise<R> {
    if (this.failed !== null) return Promise.reject(new Error('sequencer stopped: journal write failed', { cause: this.failed }));
    if (this.batch === null) {
      try {
        return Promise.resolve(fn());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return this.batch.done.then(() => this.read(fn));
  }

  /** Whether a command is waiting for its batch to commit (for tests and shutdown). */
  get pending(): boolean {
    return this.batch !== null;
  }

  private openBatch(): Batch {
    if (this.batch) return this.batch;
    const resolvers: Array<() => void> = [];
    const done = new Promise<void>((resolve) => resolvers.push(resolve));
    const batch: Batch = { records: [], cmds: [], resolvers, done };
    this.batch = batch;
    setImmediate(() => this.flush());
    return batch;
  }

  /** Writes the pending batch in one transaction, then snapshots if `snapshotEvery` is reached. */
  flush(): void {
    if (this.writeBatch() && this.sinceSnapshot >= this.opts.snapshotEvery) this.saveSnapshot();
  }

  /** Snapshots the state as of the last applied command (flushing what is pending first). */
  takeSnapshot(): void {
    this.writeBatch();
    if (this.failed === null) this.saveSnapshot();
  }

  /** Flushes what is pending and refuses further commands. */
  stop(): void {
    this.flush();
    this.stopped = true;
  }

  /** Writes the pending batch; true when one was written. */
  private writeBatch(): boolean {
    const batch = this.batch;
    if (!batch || this.failed !== null) return false;
    this.batch = null;
    try {
      this.journal.append(batch.records);
    } catch (err) {
      // The replies of this batch never resolve: they were not made durable.
      this.fail(err);
      return false;
    }
    this.sinceSnapshot += batch.records.length;
    for (const r of batch.resolvers) r();
    this.opts.onCommitted?.(batch.cmds);
    return true;
  }

  private saveSnapshot(): void {
    // Synchronous from serialize to save and called with no batch pending, so the state serialized
    // is exactly the state after `lastSeq`, the last record on disk. A command submitted by an
    // onCommitted callback would make the state run ahead of the journal: snapshot after its batch.
    if (this.batch !== null) return;
    this.sinceSnapshot = 0;
    let data: string;
    try {
      data = this.snapshot();
    } catch (err) {
      this.opts.onSnapshotError?.(err);
      return;
    }
    try {
      this.journal.saveSnapshot(this.lastSeq, data);
    } catch (err) {
      // The journal refuses every write after a failed one, so carrying on would only fail later
      // (and until then acknowledge nothing): stop now, like a failed append (DESIGN.md rule 3).
      this.fail(err);
    }
  }

  private fail(err: unknown): void {
    this.failed = err;
    this.stopped = true;
    this.opts.onFatal(err);
  }
}
