// Snapshots in the embedded journal (src/journal/sqliteJournal.ts), whole or in parts.
//
// Why parts (issue 36, the open loop's collapse): the journal writer thread writes appends and
// snapshots through one connection, in the order it is handed them. A snapshot written as one
// transaction (tens of MB for a busy venue) made every order batch behind it wait for the whole
// write, its fsync and the checkpoint it set off: measured under the open-loop bench, order commits
// of 250-500 ms every time a background snapshot landed. In parts, each part is a transaction of its
// own, and the engine side hands over the next part only once the previous one is written
// (workerJournal.ts), so a batch waits behind one part at most.
//
// Crash safety: the parts are written first (`snapshot_parts`), each committed; the snapshot exists
// only once its row in `snapshots` is committed, which names how many parts it has and is written
// last. A crash in between leaves parts no row names: never read, and removed by the next snapshot
// that completes. Readers look at `snapshots` only, so an incomplete snapshot is never restored.
import type { SqliteDatabase } from './sqliteJournal.ts';
import { RejectedWrite, SNAPSHOTS_KEPT } from './journal.ts';

/** Schema v2 additions on top of v1's `snapshots (seq, data)`: the part count and the parts table. */
export function migrateSnapshotParts(db: SqliteDatabase): void {
  const columns = db.prepare<[], string>("SELECT name FROM pragma_table_info('snapshots')").pluck().all();
  // data is '' for a snapshot in parts: its text is the parts', in order
  if (!columns.includes('parts')) db.exec('ALTER TABLE snapshots ADD COLUMN parts INTEGER NOT NULL DEFAULT 0');
  db.exec('CREATE TABLE IF NOT EXISTS snapshot_parts (seq INTEGER NOT NULL, part INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (seq, part)) STRICT');
}

export interface SnapshotStore {
  /** A whole snapshot in one transaction (small ones, and the synchronous journal's callers). */
  save(seq: number, data: string): void;
  /** Part `part` (from 0) of the snapshot at `seq`, in a transaction of its own; invisible until finish(). */
  savePart(seq: number, part: number, data: string): void;
  /** Makes the snapshot at `seq` of `parts` parts (all written) the latest, and prunes older ones. */
  finish(seq: number, parts: number): void;
  latest(): { seq: number; data: string } | null;
}

/** `lastSeq` reads the journal's last record (under the write lock when called in a write). */
export function snapshotStore(db: SqliteDatabase, lastSeq: () => number): SnapshotStore {
  const upsert = db.prepare<[number, string, number]>(
    'INSERT INTO snapshots (seq, data, parts) VALUES (?, ?, ?) ON CONFLICT (seq) DO UPDATE SET data = excluded.data, parts = excluded.parts',
  );
  const prune = db.prepare<[number]>('DELETE FROM snapshots WHERE seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT ?)');
  // parts of pruned snapshots, and of ones a crash left unfinished below the one just completed
  const pruneParts = db.prepare<[number]>('DELETE FROM snapshot_parts WHERE seq <= ? AND seq NOT IN (SELECT seq FROM snapshots)');
  const clearParts = db.prepare<[number]>('DELETE FROM snapshot_parts WHERE seq = ?');
  const insertPart = db.prepare<[number, number, string]>('INSERT OR REPLACE INTO snapshot_parts (seq, part, data) VALUES (?, ?, ?)');
  const countParts = db.prepare<[number], { n: number; top: number | null }>('SELECT COUNT(*) AS n, MAX(part) AS top FROM snapshot_parts WHERE seq = ?');
  const selectLatest = db.prepare<[], { seq: number; data: string; parts: number }>('SELECT seq, data, parts FROM snapshots ORDER BY seq DESC LIMIT 1');
  const selectParts = db.prepare<[number], string>('SELECT data FROM snapshot_parts WHERE seq = ? ORDER BY part').pluck();

  const notPast = (seq: number) => {
    const last = lastSeq();
    // A snapshot past the journal would hold state no durable record explains (DESIGN.md rule 4).
    if (seq > last) throw new RejectedWrite(`journal: snapshot seq ${seq} is past the last journaled seq ${last}`);
  };
  const saveTx = db.transaction((seq: number, data: string) => {
    notPast(seq);
    upsert.run(seq, data, 0);
    prune.run(SNAPSHOTS_KEPT);
    pruneParts.run(seq);
  });
  const partTx = db.transaction((seq: number, part: number, data: string) => {
    notPast(seq);
    // a first part starts over whatever an earlier, interrupted attempt at this seq left
    if (part === 0) clearParts.run(seq);
    insertPart.run(seq, part, data);
  });
  const finishTx = db.transaction((seq: number, parts: number) => {
    notPast(seq);
    const { n, top } = countParts.get(seq)!;
    if (n !== parts || top !== parts - 1) throw new RejectedWrite(`journal: snapshot ${seq} has ${n} of its ${parts} parts written`);
    upsert.run(seq, '', parts);
    prune.run(SNAPSHOTS_KEPT);
    pruneParts.run(seq);
  });

  return {
    save: (seq, data) => saveTx.immediate(seq, data),
    savePart: (seq, part, data) => partTx.immediate(seq, part, data),
    finish: (seq, parts) => finishTx.immediate(seq, parts),
    latest() {
      const row = selectLatest.get();
      if (row === undefined) return null;
      if (row.parts === 0) return { seq: row.seq, data: row.data };
      const parts = selectParts.all(row.seq);
      if (parts.length !== row.parts) throw new Error(`journal: snapshot ${row.seq} names ${row.parts} parts, ${parts.length} found`);
      return { seq: row.seq, data: parts.join('') };
    },
  };
}
