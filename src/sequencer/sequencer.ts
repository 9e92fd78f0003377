// The single writer: validate -> sequence -> apply -> journal -> acknowledge.
//
// Commands are applied to the in-memory engine as they arrive; their journal records are written
// in one batch per event-loop turn (group commit) and only then are replies released. Reads that
// arrive while a batch is pending wait for it, so nothing is ever visible before it is durable.
// A failed journal write is fatal: the process stops and recovers from the journal on restart.
//
// The journal may write synchronously (the SQLite adapter on this thread) or asynchronously (the
// same adapter in a worker thread, src/journal/workerJournal.ts; a network database). With an
// asynchronous one the writes are pipelined: a batch is handed over at the end of its event-loop
// turn while fewer than MAX_WRITES_IN_FLIGHT are being written, otherwise it keeps filling until
// one of them is durable. Batches complete in order; each releases only its own replies.
import type { Command, Sequenced } from '../engine/commands.ts';
import type { Exchange } from '../engine/exchange.ts';
import { ERR, reject } from '../domain/errors.ts';
import type { JournalRecord, JournalWriter } from '../journal/journal.ts';
import { decodeCommand, encodeCompact } from '../journal/commandCodec.ts';
import { joinSnapshotParts } from '../journal/snapshotParts.ts';

/**
 * Batches handed to an asynchronous journal and not yet durable, at most. With two, the journal
 * starts the next batch the moment the previous one is durable, instead of waiting for this thread
 * to notice and hand it over (a cross-thread round trip, often delayed by a burst of requests this
 * thread is busy with). Measured with 100 connections: +15% throughput, p99 9.5 -> 6.7 ms with a
 * light load generator; more than two only makes the batches smaller.
 */
export const MAX_WRITES_IN_FLIGHT = 2;

/**
 * A command submitted to a standby (src/app/standby.ts): only the leader sequences commands. The API
 * answers it with 10040 naming the leader (docs/api-notes.md, "Standby").
 */
export class StandbyRefusal extends Error {
  override name = 'StandbyRefusal';
  constructor(readonly leaderUrl: string | null) {
    super(`this server is a standby; the leader is ${leaderUrl ?? 'unknown'}`);
  }
}

/** Who the leader is, as a standby knows it; null leader URL when no leader has announced itself. */
export interface StandbyRole {
  leaderUrl(): string | null;
}

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
  /** Called after each batch is durable, with the commands it held (for event fan-out) and the
   *  seconds from its hand-over to the journal until durable (for metrics). `followed`: the batch
   *  is the leader's, applied by a standby (follow()): this process wrote nothing, so it must not
   *  count a commit or publish the batch anywhere but to its own clients. */
  onCommitted?: (cmds: Sequenced[], seconds: number, followed: boolean) => void;
  /**
   * Called when a batch is sealed (handed to the journal, or followed by a standby), before it is
   * durable. The engine state at that moment is exactly the state after the batch's last command:
   * every command applied since is in the batch, none after it. What a stream shows of the batch is
   * rendered here (later batches change the live objects) and released by onCommitted, which is
   * called for the sealed batches one by one, in the same order.
   */
  onSealed?: (cmds: Sequenced[]) => void;
  /** The state could not be serialized for a snapshot (a bug, not fatal: the journal has it all). */
  onSnapshotError?: (err: unknown) => void;
  /**
   * Decides how a due snapshot is taken, instead of takeSnapshot() right away: called with the last
   * durable seq. It may call takeSnapshot(), or build the snapshot elsewhere and hand it to
   * saveSnapshot() (src/app/backgroundSnapshots.ts).
   */
  snapshotDue?: (durableSeq: number) => void;
}

/**
 * Takes a command's reply by a call instead of a promise (`Sequencer.submitThen`): `settle` runs
 * once the command's batch is durable, with the reply `render` made (`ok`) or what it threw.
 */
export interface ReplySink {
  settle(reply: unknown, ok: boolean): void;
}

/** What `submitThen` returns when the reply will go to the sink. */
export const DEFERRED: unique symbol = Symbol('deferred');

interface Batch {
  records: JournalRecord[];
  cmds: Sequenced[];
  resolvers: Array<() => void>;
  /** submitThen's sinks, each with its reply (or what render threw) and whether render succeeded */
  sinks: ReplySink[];
  sinkReplies: unknown[];
  sinkOk: boolean[];
  done: Promise<void>;
  /** performance.now() at hand-over (a measurement only: never journaled, never applied). */
  handedAt: number;
}

/** Whether JSON text gives back exactly this object: flat, and every value kept as it is. */
function isFlatJsonExact(o: object): boolean {
  for (const k in o) {
    const v = (o as Record<string, unknown>)[k];
    switch (typeof v) {
      case 'string':
      case 'boolean':
        break;
      case 'number':
        if (!Number.isFinite(v) || Object.is(v, -0)) return false;
        break;
      case 'object':
        if (v !== null) return false;
        break;
      default:
        return false;
    }
  }
  return true;
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
  /** The batch being filled: commands applied, records not yet handed to the journal. */
  private open: Batch | null = null;
  /** The batch most recently handed to the journal (its `done` settles after all earlier ones). */
  private lastHanded: Batch | null = null;
  /** Batches handed to an asynchronous journal and not yet durable. */
  private writing = 0;
  private lastSeq: number;
  private lastTs: number;
  private sinceSnapshot = 0;
  private stopped = false;
  /** A journal write failed: the in-memory state holds commands that may not be durable. */
  private failed: unknown = null;
  /** Settles when a write fails, so that waiting for the drain does not hang on a dead journal. */
  private readonly failedSignal: Promise<void>;
  private signalFailed!: () => void;
  /** Set while this process is a standby: commands are refused, records come from follow(). */
  private standby: StandbyRole | null = null;

  constructor(
    readonly ex: Exchange,
    private journal: JournalWriter,
    private readonly clock: Clock,
    private readonly opts: SequencerOptions,
    private readonly snapshot: () => string,
  ) {
    this.lastSeq = journal.lastSeq();
    this.lastTs = ex.now;
    this.sinceSnapshot = opts.recordsSinceSnapshot ?? 0;
    this.failedSignal = new Promise<void>((resolve) => (this.signalFailed = resolve));
  }

  /**
   * Sequences and applies a command; `render` turns the engine result into the reply right away
   * (later commands may change live objects), and the reply is released once the record is durable.
   * A `render` that throws (e.g. `unwrap` of a rejection) rejects the reply, also only once durable.
   * `fresh`: the caller built `cmd` for this call alone and never reads it again (see `sequence`).
   */
  submit<R>(cmd: Command, render: (result: unknown) => R, fresh = false): Promise<R> {
    if (this.standby !== null) return Promise.reject(new StandbyRefusal(this.standby.leaderUrl()));
    if (this.failed !== null) return Promise.reject(new Error('sequencer stopped: journal write failed', { cause: this.failed }));
    if (this.stopped) return Promise.reject(new Error('sequencer stopped'));
    // A refusal that changes nothing (a cancel of an unknown or closed order) is not sequenced: it
    // would only grow the journal (20,000 such cancels were 1.84 MB) and replay would refuse it
    // again. Its answer still waits until the state it was decided on is durable, like a read.
    const refused = this.ex.refusalOf(cmd);
    if (refused !== null) return this.read(() => render(refused));
    const batch = this.sequence(cmd, render, fresh);
    const reply = this.rendered;
    this.rendered = undefined;
    if (!this.renderedOk) return batch.done.then(() => Promise.reject(reply));
    return batch.done.then(() => reply as R);
  }

  /**
   * submit() whose reply goes to `sink.settle` when the batch is durable, called by the batch
   * itself: no promise, closure or await per command. A WebSocket's order (src/api/ws/server.ts)
   * is answered so; it held a promise chain and two suspended async functions per order until its
   * batch was durable, which every scavenge in the meantime copied. Returns DEFERRED; a command
   * not sequenced (refused without change, a standby, a stopped sequencer) settles through
   * submit()'s promise instead, as late as submit() would answer it.
   */
  submitThen(cmd: Command, render: (result: unknown) => unknown, sink: ReplySink, fresh = false): typeof DEFERRED {
    if (this.standby !== null || this.failed !== null || this.stopped || this.ex.refusalOf(cmd) !== null) {
      this.submit(cmd, render, fresh).then(
        (reply) => sink.settle(reply, true),
        (err: unknown) => sink.settle(err, false),
      );
      return DEFERRED;
    }
    const batch = this.sequence(cmd, render, fresh);
    batch.sinks.push(sink);
    batch.sinkReplies.push(this.rendered);
    batch.sinkOk.push(this.renderedOk);
    this.rendered = undefined;
    return DEFERRED;
  }

  /** The reply (or what render threw: renderedOk false) of the command `sequence` last took. */
  private rendered: unknown = undefined;
  private renderedOk = true;

  /**
   * Sequences, journals (into the open batch) and applies a command, then renders its reply into
   * `rendered`; returns the batch it joined. A `fresh` command (built by its caller for this call
   * alone: an order's) becomes the sequenced command itself, ts and seq added to it; any other is
   * copied, since a caller may still hold and read it.
   */
  private sequence(cmd: Command, render: (result: unknown) => unknown, fresh: boolean): Batch {
    const ts = Math.max(this.clock.now(), this.lastTs);
    const seq = this.lastSeq + 1;
    // Both ways the keys come in the same order (ts and seq last), so the journal text is the same.
    // The copy is an Object.assign, not a spread (V8's spread of a command plus two keys is several
    // times slower); for an order even the copy was ~2% of the engine thread under the WebSocket
    // orders bench (its keys added one by one to an empty object, its property store regrown).
    let sequenced: Sequenced;
    if (fresh) {
      sequenced = cmd as Sequenced;
      sequenced.ts = ts;
      sequenced.seq = seq;
    } else {
      sequenced = Object.assign({}, cmd, { ts, seq }) as Sequenced;
    }
    // Serialized before anything changes: a command that cannot be journaled is refused whole,
    // without consuming a seq (a consumed seq with no record would break the journal's contiguity).
    // The hot commands in their compact form (src/journal/commandCodec.ts), the rest as JSON.
    const compact = encodeCompact(sequenced);
    const text = compact ?? JSON.stringify(sequenced);
    this.lastTs = ts;
    this.lastSeq = seq;
    // Applied as replay will apply it, parsed from the journal text: a value JSON does not keep
    // (NaN -> null, undefined dropped, -0 -> 0, a shared object) cannot make live state and replay
    // differ. A flat command of strings, booleans, nulls and finite numbers comes back from its text
    // unchanged, so it is applied as is (most commands: orders, cancels; this runs for every one);
    // a compact text is only ever written for such a command.
    const journaled = compact !== null || isFlatJsonExact(sequenced) ? sequenced : (JSON.parse(text) as Sequenced);
    const result = applyCommand(this.ex, journaled, this.opts.onCommandError);
    // The record joins the batch before `render` runs: once applied, a command must be journaled
    // whatever its reply does. (It used to be pushed after render, so every rejected cancel or order,
    // whose render throws via unwrap, left a seq gap and the next append killed the process.)
    const batch = this.openBatch();
    batch.records.push({ seq, ts, cmd: text });
    batch.cmds.push(journaled);
    try {
      this.rendered = render(result);
      this.renderedOk = true;
    } catch (err) {
      this.rendered = err;
      this.renderedOk = false;
    }
    return batch;
  }

  /**
   * Runs a read once every command applied so far is durable. Waits again if a command was applied
   * while it waited (e.g. submitted by a callback of the same batch), so `fn` never sees state that
   * is not yet on disk.
   */
  read<R>(fn: () => R): Promise<R> {
    if (this.failed !== null) return Promise.reject(new Error('sequencer stopped: journal write failed', { cause: this.failed }));
    const waitFor = this.open ?? (this.writing > 0 ? this.lastHanded : null);
    if (waitFor === null) {
      try {
        return Promise.resolve(fn());
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return waitFor.done.then(() => this.read(fn));
  }

  /** Whether this sequencer follows a leader's journal instead of sequencing commands. */
  get isStandby(): boolean {
    return this.standby !== null;
  }

  /** The last seq applied (sequenced here, or followed from the leader's journal). */
  get appliedSeq(): number {
    return this.lastSeq;
  }

  /** Throws the standby refusal on a standby: for a write that is not a command (operator settings in the meta table). */
  assertLeader(): void {
    if (this.standby !== null) throw new StandbyRefusal(this.standby.leaderUrl());
  }

  /** Makes this sequencer a standby: every submit is refused until promote(). */
  becomeStandby(role: StandbyRole): void {
    if (this.pending || this.lastHanded !== null) throw new Error('sequencer: only a sequencer that never sequenced a command can become a standby');
    this.standby = role;
  }

  /**
   * A standby applies the leader's durable records, in seq order, through the same applyCommand as
   * recovery's replay (so its state hash equals the leader's at every seq), and hands them to
   * onCommitted as a durable batch (live streams). A gap means records were missed: it throws.
   */
  follow(records: readonly { seq: number; ts: number; cmd: string }[]): void {
    if (this.standby === null) throw new Error('sequencer: follow() is for a standby');
    if (records.length === 0) return;
    const cmds: Sequenced[] = [];
    for (const r of records) {
      if (r.seq !== this.lastSeq + 1) throw new Error(`standby: journal record ${r.seq} does not follow ${this.lastSeq}`);
      const cmd = decodeCommand(r.cmd, r.seq, r.ts);
      applyCommand(this.ex, cmd, this.opts.onCommandError);
      this.lastSeq = r.seq;
      this.lastTs = Math.max(this.lastTs, r.ts);
      cmds.push(cmd);
    }
    this.sinceSnapshot += records.length;
    this.opts.onSealed?.(cmds);
    this.opts.onCommitted?.(cmds, 0, true);
  }

  /**
   * A standby that took the writer lock becomes the leader: `journal` (which holds the lock) must
   * end exactly where the followed records did, so the next command gets the next seq.
   */
  promote(journal: JournalWriter): void {
    if (this.standby === null) throw new Error('sequencer: promote() is for a standby');
    if (journal.lastSeq() !== this.lastSeq) throw new Error(`sequencer: the journal ends at ${journal.lastSeq()}, the state at ${this.lastSeq}`);
    this.journal = journal;
    this.standby = null;
  }

  /** Whether a command is waiting for its batch to become durable (for tests and shutdown). */
  get pending(): boolean {
    return this.open !== null || this.writing > 0;
  }

  /** Whether commands were applied that are not yet sealed into a batch (the live state is ahead of
   *  every sealed batch: what it shows cannot be attributed to one yet). */
  get hasOpenBatch(): boolean {
    return this.open !== null;
  }

  private openBatch(): Batch {
    if (this.open) return this.open;
    const resolvers: Array<() => void> = [];
    const done = new Promise<void>((resolve) => resolvers.push(resolve));
    const batch: Batch = { records: [], cmds: [], resolvers, sinks: [], sinkReplies: [], sinkOk: [], done, handedAt: 0 };
    this.open = batch;
    // With MAX_WRITES_IN_FLIGHT writes in flight, the first to complete hands this batch over.
    setImmediate(() => this.flush());
    return batch;
  }

  /** Hands the open batch to the journal, unless MAX_WRITES_IN_FLIGHT writes are in flight. */
  flush(): void {
    if (this.writing < MAX_WRITES_IN_FLIGHT) this.handOver();
  }

  /**
   * Snapshots the state as of the last applied command. The open batch is handed over first, so
   * the journal holds every record the snapshot covers before the snapshot itself (the journal
   * completes writes in order and refuses a snapshot past its last record). Returns the snapshot's
   * seq and size and its write (resolved once the journal has it), or null when none was written.
   */
  takeSnapshot(opts: { failureIsFatal?: boolean } = {}): { seq: number; bytes: number; saved: Promise<void> } | null {
    if (this.failed !== null) return null;
    this.sinceSnapshot = 0;
    const seq = this.lastSeq;
    let data: string;
    try {
      data = this.snapshot();
    } catch (err) {
      this.opts.onSnapshotError?.(err);
      return null;
    }
    this.handOver();
    const saved = this.saveSnapshot(seq, data, opts.failureIsFatal ?? true);
    return this.failed === null ? { seq, bytes: data.length, saved } : null;
  }

  /**
   * Writes a snapshot of the state as of `seq`, built on this thread or elsewhere. The journal
   * refuses one past its last record, so `seq` must be handed over already (it is when durable).
   * Resolves once the journal has it (or has failed, which stops the sequencer).
   */
  saveSnapshot(seq: number, data: string, failureIsFatal = true): Promise<void> {
    if (this.failed !== null) return Promise.resolve();
    let written: void | Promise<void>;
    try {
      written = this.journal.saveSnapshot(seq, data);
    } catch (err) {
      // a stopped sequencer (the snapshot of a planned stop) writes nothing after it: the caller
      // logs the failure and the stop goes on; the journal alone still recovers everything
      if (!failureIsFatal) return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      // The journal refuses every write after a failed one, so carrying on would only fail later
      // (and until then acknowledge nothing): stop now, like a failed append (DESIGN.md rule 3).
      this.fail(err);
      return Promise.resolve();
    }
    if (!(written instanceof Promise)) return Promise.resolve();
    return failureIsFatal ? written.catch((err: unknown) => this.fail(err)) : written;
  }

  /**
   * saveSnapshot for a snapshot built on another thread as UTF-8 parts (src/app/
   * backgroundSnapshots.ts): handed to the journal as they are when it takes parts (the embedded
   * journal's writer thread: nothing copied here), else joined into the text.
   */
  saveSnapshotParts(seq: number, parts: Uint8Array[]): Promise<void> {
    if (this.failed !== null) return Promise.resolve();
    if (this.journal.saveSnapshotParts === undefined) return this.saveSnapshot(seq, joinSnapshotParts(parts));
    return this.journal.saveSnapshotParts(seq, parts).catch((err: unknown) => this.fail(err));
  }

  /** Hands over what is pending and refuses further commands; resolves once all of it is durable. */
  stop(): Promise<void> {
    this.handOver();
    this.stopped = true;
    return this.drained();
  }

  /** Resolves when every batch handed over so far is durable, or as soon as a write has failed. */
  private drained(): Promise<void> {
    if (this.failed !== null || this.writing === 0 || this.lastHanded === null) return Promise.resolve();
    return Promise.race([this.lastHanded.done, this.failedSignal]);
  }

  /** Gives the open batch to the journal: durable on return (synchronous journal) or later. */
  private handOver(): void {
    const batch = this.open;
    if (!batch || this.failed !== null) return;
    this.open = null;
    this.lastHanded = batch;
    this.opts.onSealed?.(batch.cmds);
    batch.handedAt = performance.now();
    let written: void | Promise<void>;
    try {
      written = this.journal.append(batch.records);
    } catch (err) {
      // The replies of this batch never resolve: they were not made durable.
      this.fail(err);
      return;
    }
    if (!(written instanceof Promise)) {
      this.committed(batch);
      return;
    }
    this.writing++;
    written.then(
      () => {
        this.writing--;
        if (this.failed !== null) return;
        this.committed(batch);
        // what filled while the journal was busy goes next, as one batch
        if (this.writing < MAX_WRITES_IN_FLIGHT) this.handOver();
      },
      (err: unknown) => {
        this.writing--;
        this.fail(err);
      },
    );
  }

  /** A batch is durable: release its replies and events, then snapshot if one is due. */
  private committed(batch: Batch): void {
    this.sinceSnapshot += batch.records.length;
    for (const r of batch.resolvers) r();
    this.opts.onCommitted?.(batch.cmds, (performance.now() - batch.handedAt) / 1000, false);
    // after onCommitted, as the resolved promises' replies run after it (their jobs run later)
    const { sinks, sinkReplies, sinkOk } = batch;
    for (let i = 0; i < sinks.length; i++) {
      try {
        sinks[i]!.settle(sinkReplies[i], sinkOk[i]!);
      } catch (err) {
        // a sink that throws is a bug of its own: the other replies of the batch still go
        this.opts.onCommandError?.(err, batch.cmds[0]!);
      }
    }
    if (this.sinceSnapshot < this.opts.snapshotEvery) return;
    if (this.opts.snapshotDue === undefined) {
      this.takeSnapshot();
      return;
    }
    this.sinceSnapshot = 0;
    this.opts.snapshotDue(batch.records[batch.records.length - 1]!.seq);
  }

  private fail(err: unknown): void {
    if (this.failed !== null) return;
    this.failed = err;
    this.stopped = true;
    this.signalFailed();
    this.opts.onFatal(err);
  }
}
