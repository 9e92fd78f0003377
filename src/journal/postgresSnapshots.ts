// Snapshots in the PostgreSQL journal (src/journal/postgresJournal.ts), whole or in parts: the same
// tables and rules as the embedded journal's (sqliteSnapshots.ts).
//
// Why parts (issue 36): the writer connection runs every write in the order it was issued, so a
// snapshot written as one statement made every order batch issued after it wait for the whole
// transfer, the server's TOAST and WAL of tens of MB; and sending it as one parameter put the whole
// text in one buffer on the engine thread, twice (the parts joined, then copied into node-postgres'
// message). In parts, each part (at most `SNAPSHOT_PART_CHARS`, src/journal/snapshotParts.ts) is a
// statement of its own, issued only once the previous one is written, so an append waits behind one
// part at most and no buffer is larger than a part.
//
// Crash safety: the parts are written first (`snapshot_parts`), each committed; the snapshot exists
// only once its row in `snapshots` is committed, which names how many parts it has and is written
// last, after checking that they are all there (the tables: postgresSetup.ts, schema version 3). A crash in between leaves parts no row names: never
// read, and removed when the next snapshot completes. Readers read the row and its parts in one
// statement (one MVCC snapshot), so an incomplete or pruned snapshot is never restored.
import type pg from 'pg';
import { RejectedWrite, SNAPSHOTS_KEPT } from './journal.ts';
import { int8 } from './postgresSetup.ts';

/** The text, or its UTF-8 bytes: node-postgres sends a Buffer as a binary parameter, which for a
 *  text column is the text's bytes, checked as UTF-8 by the server (no string is made here). */
export type SnapshotText = string | Buffer;

function checkSeq(seq: number, committedSeq: number): void {
  if (!Number.isSafeInteger(seq) || seq < 0) throw new RejectedWrite(`journal: snapshot seq must be a non-negative safe integer, got ${seq}`);
  // A snapshot past the journal would hold state no durable record explains (DESIGN.md rule 4).
  // Every append issued before this snapshot has committed by now (writes run in order).
  if (seq > committedSeq) throw new RejectedWrite(`journal: snapshot seq ${seq} is past the last journaled seq ${committedSeq}`);
}

/** Makes the row of the snapshot at `seq` the latest and prunes older snapshots and unnamed parts, in one transaction. */
async function commitRow(client: pg.ClientBase, seq: number, data: SnapshotText, parts: number, check?: () => Promise<void>): Promise<void> {
  await client.query('BEGIN');
  try {
    await check?.();
    await client.query('INSERT INTO snapshots (seq, data, parts) VALUES ($1, $2, $3) ON CONFLICT (seq) DO UPDATE SET data = excluded.data, parts = excluded.parts', [seq, data, parts]);
    await client.query('DELETE FROM snapshots WHERE seq NOT IN (SELECT seq FROM snapshots ORDER BY seq DESC LIMIT $1)', [SNAPSHOTS_KEPT]);
    // parts of pruned snapshots, and of ones a crash left unfinished below the one just completed
    await client.query('DELETE FROM snapshot_parts WHERE seq <= $1 AND seq NOT IN (SELECT seq FROM snapshots)', [seq]);
    await client.query('COMMIT');
  } catch (e) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** A whole snapshot in one transaction. */
export async function saveWholeSnapshot(client: pg.ClientBase, committedSeq: number, seq: number, data: SnapshotText): Promise<void> {
  checkSeq(seq, committedSeq);
  if (typeof data !== 'string' && !Buffer.isBuffer(data)) throw new RejectedWrite('journal: snapshot data must be a string or its UTF-8 bytes');
  await commitRow(client, seq, data, 0);
}

/** Part `part` (from 0) of the snapshot at `seq`, committed on its own; invisible until `finishSnapshot`. */
export async function saveSnapshotPart(client: pg.ClientBase, committedSeq: number, seq: number, part: number, data: Buffer): Promise<void> {
  checkSeq(seq, committedSeq);
  if (part === 0) {
    // a first part starts over whatever an earlier, interrupted attempt at this seq left
    await client.query('BEGIN');
    try {
      await client.query('DELETE FROM snapshot_parts WHERE seq = $1', [seq]);
      await insertPart(client, seq, part, data);
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    }
    return;
  }
  await insertPart(client, seq, part, data);
}

function insertPart(client: pg.ClientBase, seq: number, part: number, data: Buffer): Promise<unknown> {
  return client.query({
    name: 'strikebook_snapshot_part',
    text: 'INSERT INTO snapshot_parts (seq, part, data) VALUES ($1, $2, $3) ON CONFLICT (seq, part) DO UPDATE SET data = excluded.data',
    values: [seq, part, data],
  });
}

/** Makes the snapshot at `seq`, whose `parts` parts are all written, the latest; refused if one is missing. */
export async function finishSnapshot(client: pg.ClientBase, committedSeq: number, seq: number, parts: number): Promise<void> {
  checkSeq(seq, committedSeq);
  await commitRow(client, seq, '', parts, async () => {
    const res = await client.query<{ n: number; top: number | null }>('SELECT COUNT(*)::int AS n, MAX(part) AS top FROM snapshot_parts WHERE seq = $1', [seq]);
    const { n, top } = res.rows[0]!;
    if (n !== parts || top !== parts - 1) throw new RejectedWrite(`journal: snapshot ${seq} has ${n} of its ${parts} parts written`);
  });
}

/** The latest snapshot: its row and, for one in parts, its parts, read by one statement. */
export async function readLatestSnapshot(read: <R extends pg.QueryResultRow>(q: pg.QueryConfig) => Promise<R[]>): Promise<{ seq: number; data: string } | null> {
  const rows = await read<{ seq: string; parts: number; part: number | null; data: string }>({
    text: `SELECT s.seq, s.parts, p.part, COALESCE(p.data, s.data) AS data
             FROM (SELECT seq, data, parts FROM snapshots ORDER BY seq DESC LIMIT 1) s
             LEFT JOIN snapshot_parts p ON s.parts > 0 AND p.seq = s.seq
            ORDER BY p.part`,
  });
  const first = rows[0];
  if (first === undefined) return null;
  const seq = int8(first.seq, 'snapshot seq');
  if (first.parts === 0) return { seq, data: first.data };
  if (rows.length !== first.parts || rows.some((r, i) => r.part !== i)) throw new Error(`journal: snapshot ${seq} names ${first.parts} parts, ${rows.filter((r) => r.part !== null).length} found`);
  return { seq, data: rows.map((r) => r.data).join('') };
}
