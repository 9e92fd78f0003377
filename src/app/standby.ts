// The hot standby (docs/operations.md): a server started on a DATABASE_URL whose leadership lease
// another server holds. It follows the leader's journal (LISTEN for the NOTIFY each commit sends, and
// a poll as the fallback when a notification is lost or the listening connection is down), applying
// the records through the sequencer's follow() (the same applyCommand as recovery's replay), and
// waits for the lease (src/journal/postgresLease.ts). When the leader's lease expires (it froze, its
// connection hangs, the network is cut: the lease's few seconds) or its session ends (a crash: at
// once) it takes the lease with the next term, applies the tail it has not seen from the journal,
// and hands over to the caller, who promotes the sequencer.
import type pg from 'pg';
import type { Logger } from 'pino';
import { openPostgresJournal, type PostgresJournal, type PostgresJournalOptions } from '../journal/postgresJournal.ts';
import type { JournalRecord, MetaStore } from '../journal/journal.ts';
import type { Sequencer } from '../sequencer/sequencer.ts';

/** The meta key the leader writes its advertised URL under, for standbys to name in their refusals. */
export const LEADER_URL_META = 'leader_url';

/** Records applied per slice: a long catch-up yields to requests between slices. */
const FOLLOW_SLICE = 2_000;
/** How often a standby tries the writer lock (the takeover's share of the failover time). */
const LOCK_RETRY_MS = 100;
/** How long a failed attempt to open the writer journal waits before the next one. */
const TAKEOVER_RETRY_MS = 1_000;
const LISTEN_CONNECT_TIMEOUT_MS = 5_000;

export interface StandbyStatus {
  /** The last seq applied here. */
  appliedSeq: number;
  /** The highest seq the leader is known to have committed (notifications and polls). */
  leaderSeq: number;
  /** How long the standby has been behind the leader's known seq (0 when caught up), ms. */
  lagMs: number;
  /** Since the last read of the journal that succeeded, ms (a database out of reach shows here). */
  sinceLastReadMs: number;
  leaderUrl: string | null;
}

export interface StandbyOptions {
  url: string;
  /** The read-only journal recovery read the state from: the follower reads the tail through it. */
  reader: PostgresJournal;
  /** The options the writer journal is opened with once the lock is free (retention...). */
  writerOptions: PostgresJournalOptions;
  pollMs: number;
  log: Logger;
  /** The follower cannot go on (a gap in the journal): the process must stop and recover. */
  onFatal(err: unknown): void;
}

export class StandbyFollower {
  private seq: Sequencer | null = null;
  private leaderSeq = 0;
  private behindSince: number | null = null;
  private lastRead = performance.now();
  private leaderUrlValue: string | null = null;
  private listener: pg.Client | null = null;
  private listening = false;
  private timer: NodeJS.Timeout | null = null;
  /** The catch-up in progress; another is due when a notification came in meanwhile. */
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(private readonly opts: StandbyOptions) {}

  /** Whether notifications arrive now (LISTEN is in place); without them only the poll follows. */
  get isListening(): boolean {
    return this.listening;
  }

  leaderUrl(): string | null {
    return this.leaderUrlValue;
  }

  status(): StandbyStatus {
    const applied = this.seq?.appliedSeq ?? 0;
    const now = performance.now();
    return {
      appliedSeq: applied,
      leaderSeq: Math.max(this.leaderSeq, applied),
      lagMs: this.behindSince === null ? 0 : Math.round(now - this.behindSince),
      sinceLastReadMs: Math.round(now - this.lastRead),
      leaderUrl: this.leaderUrlValue,
    };
  }

  /**
   * Starts following into `seq` (a standby sequencer) and waiting for the writer lock; resolves with
   * the writer journal, holding the lock and with the tail applied, or null when closed first.
   */
  async run(seq: Sequencer): Promise<PostgresJournal | null> {
    this.seq = seq;
    await this.readLeaderUrl().catch(() => undefined);
    this.timer = setInterval(() => this.kick(), this.opts.pollMs);
    this.timer.unref();
    this.kick();
    const writer = await this.takeLock();
    if (writer === null) return null;
    // The lease is ours, with a new term: everything the old leader committed is in the table and
    // nothing more can be (its appends are fenced on the term, serialized with the takeover on the
    // lease row). Stop following, then
    // read what is left through the writer journal itself.
    this.stopFollowing();
    await this.running?.catch(() => undefined);
    try {
      await this.apply(writer.readAfter(seq.appliedSeq));
    } catch (err) {
      await writer.close();
      throw err;
    }
    return writer;
  }

  /** Stops following and waiting; a takeover in progress is abandoned (its journal closed). */
  async close(): Promise<void> {
    this.stopped = true;
    this.abort.abort();
    this.stopFollowing();
    await this.running?.catch(() => undefined);
  }

  private stopFollowing(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    const l = this.listener;
    this.listener = null;
    this.listening = false;
    void l?.end().catch(() => undefined);
  }

  private async takeLock(): Promise<PostgresJournal | null> {
    while (!this.stopped) {
      try {
        const j = await openPostgresJournal(this.opts.url, { ...this.opts.writerOptions, lockWaitMs: Number.MAX_SAFE_INTEGER, lockRetryMs: LOCK_RETRY_MS, signal: this.abort.signal });
        if (this.stopped) {
          await j.close();
          return null;
        }
        return j;
      } catch (err) {
        if (this.stopped) return null;
        // the database out of reach, or the connection cut while waiting: try again
        this.opts.log.warn({ err }, 'standby: waiting for the writer lock failed; trying again');
        await new Promise((r) => setTimeout(r, TAKEOVER_RETRY_MS));
      }
    }
    return null;
  }

  /** Runs a catch-up now, or right after the one in progress. */
  private kick(): void {
    if (this.stopped || this.timer === null) return;
    if (this.running !== null) {
      this.again = true;
      return;
    }
    this.running = this.catchUp().finally(() => {
      this.running = null;
      if (this.again) {
        this.again = false;
        this.kick();
      }
    });
  }

  private async catchUp(): Promise<void> {
    try {
      // without notifications the poll still follows, only later
      await this.ensureListening().catch((err: unknown) => this.opts.log.warn({ err }, 'standby: LISTEN failed; following by polling'));
      await this.apply(this.opts.reader.readAfter(this.seq!.appliedSeq));
      await this.readLeaderUrl();
    } catch (err) {
      if (this.stopped || this.timer === null) return;
      if (err instanceof FollowGap) {
        this.opts.onFatal(err);
        return;
      }
      this.opts.log.warn({ err }, 'standby: reading the journal failed; polling again');
    }
  }

  /**
   * Applies records as the leader's batches they were written in (a change of `tx` starts the next
   * one): the streams render each as the leader did, so what a new leader republishes to NATS
   * carries the old leader's dedupe ids. Yields to requests every FOLLOW_SLICE records or so.
   */
  private async apply(records: AsyncIterable<JournalRecord>): Promise<void> {
    const seq = this.seq!;
    let batch: JournalRecord[] = [];
    let sinceYield = 0;
    const flush = () => {
      if (batch.length === 0) return;
      try {
        seq.follow(batch);
      } catch (err) {
        throw new FollowGap(err instanceof Error ? err.message : String(err));
      }
      sinceYield += batch.length;
      batch = [];
    };
    for await (const r of records) {
      // (records without a tx, from a journal that does not record it, go in slices)
      if (batch.length > 0 && (r.tx !== batch[0]!.tx || (r.tx === undefined && batch.length >= FOLLOW_SLICE))) {
        flush();
        if (sinceYield >= FOLLOW_SLICE) {
          sinceYield = 0;
          await new Promise((r) => setImmediate(r));
        }
      }
      batch.push(r);
    }
    // the last batch is whole: a transaction's records become visible together
    flush();
    this.lastRead = performance.now();
    this.noteLeaderSeq(seq.appliedSeq);
  }

  private noteLeaderSeq(n: number): void {
    if (n > this.leaderSeq) this.leaderSeq = n;
    const applied = this.seq?.appliedSeq ?? 0;
    if (this.leaderSeq <= applied) this.behindSince = null;
    else this.behindSince ??= performance.now();
  }

  private async readLeaderUrl(): Promise<void> {
    this.leaderUrlValue = await this.opts.reader.getMeta(LEADER_URL_META);
  }

  /** LISTEN on the journal channel; a lost connection is replaced at the next poll. */
  private async ensureListening(): Promise<void> {
    if (this.listening) return;
    // loaded on first use (postgresJournal.ts says why); cached by the module loader after that
    const { default: pgModule } = await import('pg');
    const client = new pgModule.Client({ connectionString: this.opts.url, connectionTimeoutMillis: LISTEN_CONNECT_TIMEOUT_MS, keepAlive: true, application_name: 'strikebook-standby' });
    const lost = () => {
      if (this.listener === client) {
        this.listener = null;
        this.listening = false;
      }
    };
    client.on('error', lost);
    client.on('end', lost);
    client.on('notification', (m) => {
      if (m.channel !== this.opts.reader.channel) return;
      const n = Number(m.payload);
      if (Number.isSafeInteger(n)) this.noteLeaderSeq(n);
      this.kick();
    });
    await client.connect();
    if (this.stopped || this.timer === null) {
      await client.end().catch(() => undefined);
      return;
    }
    await client.query(`LISTEN "${this.opts.reader.channel}"`);
    this.listener = client;
    this.listening = true;
  }
}

/** The journal does not continue where the standby is (records deleted, or a bug): not recoverable here. */
class FollowGap extends Error {
  override name = 'FollowGap';
}

/** Waits until the leader has written meta `key` (the API-key server key, written once at its start). */
export async function awaitMeta(meta: MetaStore, key: string, timeoutMs: number): Promise<string> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await meta.getMeta(key);
    if (v !== null) return v;
    if (performance.now() > deadline) throw new Error(`standby: the leader has not written "${key}" within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
