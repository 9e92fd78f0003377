// Journal retention behind snapshots (issue 14 finding 5): recovery needs only the latest snapshot
// and the records after it; the records up to the second-to-last snapshot are kept besides (a
// damaged latest snapshot can still be recovered around), everything older may go. `keep` keeps
// it all (the default: the crash tests replay the whole journal), `delete` drops it, `archive`
// first writes it to JSON-lines files under `archiveDir` (one per removed range, fsynced), then
// drops it. It runs in small steps after the writes, so no commit waits behind a large delete.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { JournalRecord } from './journal.ts';

export type RetentionMode = 'keep' | 'delete' | 'archive';

export interface JournalRetention {
  mode: RetentionMode;
  /** Where `archive` writes the removed records. */
  archiveDir: string;
  /** Records removed per step (one step after each write). */
  stepRecords: number;
}

export const KEEP_ALL: JournalRetention = { mode: 'keep', archiveDir: '', stepRecords: 0 };

/** Writes records to `<dir>/journal-<first>-<last>.jsonl` durably (temporary file, fsync, rename). */
export function archiveRecords(dir: string, records: JournalRecord[]): string {
  mkdirSync(dir, { recursive: true });
  const first = records[0]!.seq;
  const last = records[records.length - 1]!.seq;
  const file = path.join(dir, `journal-${String(first).padStart(12, '0')}-${String(last).padStart(12, '0')}.jsonl`);
  const tmp = `${file}.tmp`;
  const fd = openSync(tmp, 'w');
  try {
    const text = records.map((r) => JSON.stringify({ seq: r.seq, ts: r.ts, cmd: r.cmd })).join('\n') + '\n';
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
  return file;
}
