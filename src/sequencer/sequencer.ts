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
  onFatal: (err: unknown) => void;
  onCommandError: (err: unknown, cmd: Sequenced) => void;
  /** Called after each batch is durable, with the commands it held (for event fan-out). */
  onCommitted?: (cmds: Sequenced[]) => void;
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

  constructor(
    readonly ex: Exchange,
    private readonly journal: Journal,
    private readonly clock: Clock,
    private readonly opts: SequencerOptions,
    private readonly snapshot: () => string,
  ) {
    this.lastSeq = journal.lastSeq();
    this.lastTs = ex.now;
  }

  /**
   * Sequences and applies a command; `render` turns the engine result into the reply right away
   * (later commands may change live objects), and the reply is released once the record is durable.
   */
  submit<R>(cmd: Command, render: (result: unknown) => R): Promise<R> {
    if (this.stopped) return Promise.reject(new Error('sequencer stopped'));
    const ts = Math.max(this.clock.now(), this.lastTs);
    this.lastTs = ts;
    const seq = ++this.lastSeq;
    const sequenced = { ...cmd, ts, seq } as Sequenced;
    const result = applyCommand(this.ex, sequenced, this.opts.onCommandError);
    const reply = render(result);
    const batch = this.openBatch();
    batch.records.push({ seq, ts, cmd: JSON.stringify(sequenced) });
    batch.cmds.push(sequenced);
    return batch.done.then(() => reply);
  }

  /** Runs a read after every command applied so far is durable. */
  read<R>(fn: () => R): Promise<R> {
    if (this.batch === null) {
      try {
        return Promise.resolve(fn());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return this.batch.done.then(fn);
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

  /** Writes the pending batch in one transaction. */
  flush(): void {
    const batch = this.batch;
    if (!batch) return;
    this.batch = null;
    try {
      this.journal.append(batch.records);
    } catch (err) {
      this.stopped = true;
      this.opts.onFatal(err);
      return;
    }
    for (const r of batch.resolvers) r();
    this.opts.onCommitted?.(batch.cmds);
    this.sinceSnapshot += batch.records.length;
    if (this.sinceSnapshot >= this.opts.snapshotEvery) this.takeSnapshot();
  }

  takeSnapshot(): void {
    this.flush();
    this.sinceSnapshot = 0;
    this.journal.saveSnapshot(this.lastSeq, this.snapshot());
  }

  /** Flushes what is pending and refuses further commands. */
  stop(): void {
    this.flush();
    this.stopped = true;
  }
}
