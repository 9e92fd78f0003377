// Journal replay speed (issue 16): how fast a restart replays the journal after the last snapshot.
// `measureReplay(dataDir)` replays a data dir's whole journal from seq 0 on a fresh engine, as
// recovery does, and splits the time into reading (SQLite), decoding and applying. Run alone on any
// data dir: `node --import tsx bench/replayBench.ts <dataDir>` (`BENCH_KEEP_DATA=1 npm run bench`
// keeps the HTTP section's journal and prints where).
import { Exchange } from '../src/engine/exchange.ts';
import type { Sequenced } from '../src/engine/commands.ts';
import { openSqliteJournal } from '../src/journal/sqliteJournal.ts';
import { applyCommand } from '../src/sequencer/sequencer.ts';
import { runIfMain } from './support.ts';

export interface ReplayFigures {
  records: number;
  /** records/s of the whole replay: read, decode, apply */
  perSec: number;
  /** microseconds per record of each stage (measured in separate passes) */
  readUs: number;
  decodeUs: number;
  applyUs: number;
}

export function measureReplay(dataDir: string): ReplayFigures {
  const journal = openSqliteJournal(dataDir);
  try {
    // pass 1: read only (what SQLite costs)
    let t0 = performance.now();
    const texts: string[] = [];
    for (const rec of journal.readAfter(0)) texts.push(rec.cmd);
    const readMs = performance.now() - t0;
    // pass 2: decode only
    t0 = performance.now();
    const cmds = texts.map((t) => JSON.parse(t) as Sequenced);
    const decodeMs = performance.now() - t0;
    // pass 3: apply only
    let ex = new Exchange();
    t0 = performance.now();
    for (const c of cmds) applyCommand(ex, c);
    const applyMs = performance.now() - t0;
    // the judged figure: all three in one pass, as recovery runs them
    ex = new Exchange();
    t0 = performance.now();
    let n = 0;
    for (const rec of journal.readAfter(0)) {
      applyCommand(ex, JSON.parse(rec.cmd) as Sequenced);
      n++;
    }
    const ms = performance.now() - t0;
    const us = (x: number) => (x * 1000) / Math.max(1, n);
    return { records: n, perSec: Math.round(n / (ms / 1000)), readUs: us(readMs), decodeUs: us(decodeMs), applyUs: us(applyMs) };
  } finally {
    journal.close();
  }
}

export function replayLine(f: ReplayFigures): string {
  return (
    `journal replay: ${f.records} records = ${f.perSec} records/s (read + decode + apply, from SQLite); ` +
    `per record: read ${f.readUs.toFixed(2)} us, decode ${f.decodeUs.toFixed(2)} us, apply ${f.applyUs.toFixed(2)} us`
  );
}

runIfMain(import.meta.url, async () => {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: node --import tsx bench/replayBench.ts <dataDir>');
  return { lines: [replayLine(measureReplay(dir))], ok: true };
});
