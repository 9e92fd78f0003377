// Which durable log the exchange runs on (API.md 9): the embedded SQLite file under
// STRIKEBOOK_DATA_DIR, written by a worker thread, or PostgreSQL when DATABASE_URL is set.
// Opens it, recovers the engine from it, and hands the sequencer its writer.
import path from 'node:path';
import type { Logger } from 'pino';
import type { Sequenced } from '../engine/commands.ts';
import type { JournalWriter, MetaStore } from '../journal/journal.ts';
import { WriterLockTaken, describeDatabaseUrl, openPostgresJournal, type PostgresJournal, type PostgresJournalOptions } from '../journal/postgresJournal.ts';
import { StandbyRefusal } from '../sequencer/sequencer.ts';
import { StandbyFollower } from './standby.ts';
import { openSqliteJournal, type SqliteJournal } from '../journal/sqliteJournal.ts';
import { startJournalWriter, type WorkerJournalWriter } from '../journal/workerJournal.ts';
import type { JournalRetention } from '../journal/retention.ts';
import type { MarketViews } from '../views/marketViews.ts';
import type { Config } from './config.ts';
import { recover, recoverAsync, type Recovered } from './recovery.ts';

/** Old journal records removed per step when retention is on (a few ms of the writer). */
const JOURNAL_RETENTION_STEP = 2_000;

/** The writer journal's options from the config: retention, and the lease with what to do when it is lost. */
function writerOptions(config: Config, onLeaseLost: (err: Error) => void): PostgresJournalOptions {
  return { retention: retentionOf(config), lease: { leaseMs: config.leaseMs, renewMs: config.leaseRenewMs }, onLeaseLost };
}

function retentionOf(config: Config): JournalRetention {
  return {
    mode: config.journalRetention ?? 'keep',
    archiveDir: config.journalArchiveDir ?? path.join(config.dataDir, 'archive'),
    stepRecords: JOURNAL_RETENTION_STEP,
  };
}

/** The journal a running exchange uses, for diagnostics and tests; `storage` tells which. */
export type JournalHandles =
  | {
      storage: 'sqlite';
      /** The durable log as read on the engine thread (recovery, replay, meta). */
      journal: SqliteJournal;
      /** The thread that writes the journal (appends and snapshots) for the sequencer. */
      journalWriter: WorkerJournalWriter;
    }
  | {
      storage: 'postgres';
      /** Reads and writes both: the adapter is asynchronous already. */
      journal: PostgresJournal;
    };

export interface OpenedStorage extends Recovered {
  /**
   * `standby`: another server holds the writer lock (DATABASE_URL only); `follower` follows its
   * journal and resolves with the writer journal on takeover, which `promote` then installs.
   */
  role: 'leader' | 'standby';
  follower: StandbyFollower | null;
  /** A standby's takeover: `journal` (holding the lock) becomes the writer and the meta store. */
  promote(journal: PostgresJournal): Promise<void>;
  handles: JournalHandles;
  /** What the sequencer writes through. */
  writer: JournalWriter;
  /** Small durable server metadata (the API-key server key). */
  meta: MetaStore;
  /** Closes the writer and the journal; call after the sequencer has stopped. */
  close(): Promise<void>;
}

/**
 * `onLeaseLost`: the PostgreSQL leader's lease is lost (src/journal/postgresLease.ts); the journal
 * refuses every write already, and the server must step down (src/app/leadership.ts).
 */
export async function openStorage(config: Config, log: Logger, onCommandError: (err: unknown, cmd: Sequenced) => void, views: MarketViews, onLeaseLost: (err: Error) => void): Promise<OpenedStorage> {
  const t0 = performance.now();
  const logRecovered = (r: Recovered) => log.info({ replayed: r.replayed, seq: r.ex.seq, ms: Math.round(performance.now() - t0) }, 'state recovered');

  if (config.databaseUrl !== null) {
    let journal: PostgresJournal;
    try {
      // a standby-capable server does not wait for a lock another server holds: it follows it
      journal = await openPostgresJournal(config.databaseUrl, { ...writerOptions(config, onLeaseLost), ...(config.standby ? { lockWaitMs: 0 } : {}) });
    } catch (err) {
      if (!(err instanceof WriterLockTaken) || !config.standby) throw err;
      return openStandby(config, log, onCommandError, views, t0, onLeaseLost);
    }
    try {
      log.info({ database: describeDatabaseUrl(config.databaseUrl), schema: journal.schema }, 'journal on PostgreSQL');
      const recovered = await recoverAsync(journal, onCommandError, views);
      logRecovered(recovered);
      return { ...recovered, role: 'leader', follower: null, promote: notStandby, handles: { storage: 'postgres', journal }, writer: journal, meta: journal, close: () => journal.close() };
    } catch (err) {
      await journal.close();
      throw err;
    }
  }

  const journal = openSqliteJournal(config.dataDir);
  // The writer thread (and its checkpointer thread) start while this thread recovers: each boots
  // node and tsx and opens its connection, ~0.3-1 s that a restart otherwise waits for after the
  // replay (issue 36, restart to serving). The file exists and is migrated (opened just above, as
  // startJournalWriter requires); the writer writes nothing before the sequencer hands it a batch.
  const writerStarting = startJournalWriter(config.dataDir, () => journal.lastSeq(), { retention: retentionOf(config) });
  try {
    let recovered: Recovered;
    try {
      recovered = recover(journal, onCommandError, views);
    } catch (err) {
      await writerStarting.then((w) => w.close(), () => undefined);
      throw err;
    }
    logRecovered(recovered);
    const writer = await writerStarting;
    return {
      ...recovered,
      role: 'leader',
      follower: null,
      promote: notStandby,
      handles: { storage: 'sqlite', journal, journalWriter: writer },
      writer,
      meta: journal,
      async close() {
        await writer.close();
        journal.close();
      },
    };
  } catch (err) {
    journal.close();
    throw err;
  }
}

function notStandby(): Promise<void> {
  return Promise.reject(new Error('storage: only a standby is promoted'));
}

/** PostgreSQL error code of a missing table: the leader has not created its tables yet. */
const UNDEFINED_TABLE = '42P01';
/** How long a standby waits for a starting leader to create the tables. */
const TABLES_WAIT_MS = 30_000;

/**
 * A standby's storage: the journal opened read-only (no lock), the state recovered from it, and a
 * follower that applies the leader's later records and waits for the lock. Until the takeover its
 * writer refuses everything (the standby sequencer never hands it a batch) and so does its meta store.
 */
async function openStandby(config: Config, log: Logger, onCommandError: (err: unknown, cmd: Sequenced) => void, views: MarketViews, t0: number, onLeaseLost: (err: Error) => void): Promise<OpenedStorage> {
  const url = config.databaseUrl!;
  const reader = await openPostgresJournal(url, { readOnly: true });
  let recovered: Recovered;
  try {
    log.info({ database: describeDatabaseUrl(url), schema: reader.schema }, 'another server holds the writer lock: starting as a standby');
    for (const deadline = performance.now() + TABLES_WAIT_MS; ; ) {
      try {
        recovered = await recoverAsync(reader, onCommandError, views);
        break;
      } catch (err) {
        // a leader that has just taken the lock may not have created the tables yet
        if ((err as { code?: string }).code !== UNDEFINED_TABLE || performance.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    log.info({ replayed: recovered.replayed, seq: recovered.ex.seq, ms: Math.round(performance.now() - t0) }, 'state recovered');
  } catch (err) {
    await reader.close();
    throw err;
  }
  const follower = new StandbyFollower({
    url,
    reader,
    writerOptions: writerOptions(config, onLeaseLost),
    pollMs: config.standbyPollMs,
    log,
    onFatal(err) {
      log.fatal({ err }, 'standby: the journal cannot be followed; stopping');
      process.exit(70);
    },
  });
  const ex = recovered.ex;
  const refuse = () => {
    throw new StandbyRefusal(follower.leaderUrl());
  };
  let writerJournal: PostgresJournal | null = null;
  const storage: OpenedStorage = {
    ...recovered,
    role: 'standby',
    follower,
    handles: { storage: 'postgres', journal: reader },
    // the sequencer reads lastSeq() once, in its constructor: the recovered state's seq
    writer: { append: refuse, saveSnapshot: refuse, lastSeq: () => ex.seq },
    meta: { getMeta: (key) => reader.getMeta(key), setMeta: refuse },
    async promote(journal) {
      writerJournal = journal;
      storage.writer = journal;
      storage.meta = journal;
      storage.handles = { storage: 'postgres', journal };
      storage.role = 'leader';
      await reader.close();
    },
    async close() {
      await follower.close();
      await reader.close();
      await writerJournal?.close();
    },
  };
  return storage;
}
