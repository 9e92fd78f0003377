// The bare read of a journal: the reference of the replay line (bench/replayBench.ts) and of the
// restart line (bench/restartBench.ts). Run as a program (`node --import tsx bench/bareRead.ts
// <dataDir>`) it is the least a process restarting from that journal does: start, open the
// journal, read every record and keep it, exit; it prints the records kept and the read's own ms as
// JSON. It imports the journal adapter only, not the engine, so its start is node's and SQLite's.
import { openSqliteJournal } from '../src/journal/sqliteJournal.ts';
import { pathToFileURL } from 'node:url';

/**
 * The reference for the replay figure, measured beside it: the least a replay that keeps what it
 * reads can do. The same pages are read from the same journal, and each record is kept as it was
 * read (one small object, in a Map by seq), with no decoding and no engine. What it costs on a
 * machine is that machine's floor for the target: building a heap of the journal's size, the page
 * faults and scavenges that takes, and SQLite's reads. Returns how many records it kept.
 */
export function bareReplay(journal: ReturnType<typeof openSqliteJournal>): number {
  const kept = new Map<number, { seq: number; ts: number; text: string }>();
  for (const page of journal.readPagesAfter(0)) for (const r of page) kept.set(r[0], { seq: r[0], ts: r[1], text: r[2] });
  return kept.size;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: node --import tsx bench/bareRead.ts <dataDir>');
  const t0 = performance.now();
  const journal = openSqliteJournal(dir, { readOnly: true });
  const records = bareReplay(journal);
  journal.close();
  console.log(JSON.stringify({ records, readMs: performance.now() - t0 }));
}
