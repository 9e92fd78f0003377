// Which durable log the exchange runs on (API.md 9): the embedded SQLite file under
// STRIKEBOOK_DATA_DIR, written by a worker thread, or PostgreSQL when DATABASE_URL is set.
// Opens it, recovers the engine from it, and hands the sequencer its writer.
import path from 'node:path';
import type { Logger } from 'pino';
import type { Sequenced } from '../engine/commands.ts';
import type { JournalWriter, MetaStore } from '../journal/journal.ts';
import { describeDatabaseUrl, openPostgresJournal, type PostgresJournal } from '../journal/postgresJournal.ts';
import { openSqliteJournal, type SqliteJournal } from '../journal/sqliteJournal.ts';
import { startJournalWriter, type WorkerJournalWriter } from '../journal/workerJournal.ts';
import type { JournalRetention } from '../journal/retention.ts';
import type { MarketViews } from '../views/marketViews.ts';
import type { Config } from './config.ts';
import { recover, recoverAsync, type Recovered } from './recovery.ts';

/** Old journal records removed per step when retention is on (a few ms of the writer). */
const JOURNAL_RETENTION_STEP = 2_000;

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
  handles: JournalHandles;
  /** What the sequencer writes through. */
  writer: JournalWriter;
  /** Small durable server metadata (the API-key server key). */
  meta: MetaStore;
  /** Closes the writer and the journal; call after the sequencer has stopped. */
  close(): Promise<void>;
}

export async function openStorage(config: Config, log: Logger, onCommandError: (err: unknown, cmd: Sequenced) => void, views: MarketViews): Promise<OpenedStorage> {
  const t0 = performance.now();
  const logRecovered = (r: Recovered) => log.info({ replayed: r.replayed, seq: r.ex.seq, ms: Math.round(performance.now() - t0) }, 'state recovered');

  if (config.databaseUrl !== null) {
    const journal = await openPostgresJournal(config.databaseUrl, { retention: retentionOf(config) });
    try {
      log.info({ database: describeDatabaseUrl(config.databaseUrl), schema: journal.schema }, 'journal on PostgreSQL');
      const recovered = await recoverAsync(journal, onCommandError, views);
      logRecovered(recovered);
      return { ...recovered, handles: { storage: 'postgres', journal }, writer: journal, meta: journal, close: () => journal.close() };
    } catch (err) {
      await journal.close();
      throw err;
    }
  }

  const journal = openSqliteJournal(config.dataDir);
  try {
    const recovered = recover(journal, onCommandError, views);
    logRecovered(recovered);
    // opened after recovery, on the file recovery just read (startJournalWriter's contract)
    const writer = await startJournalWriter(config.dataDir, () => journal.lastSeq(), retentionOf(config));
    return {
      ...recovered,
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
