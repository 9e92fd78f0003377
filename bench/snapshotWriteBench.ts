// Issue 36's open-loop collapse, its journal side alone: order batches committed on a steady
// schedule through the journal writer thread while a large snapshot is written, the snapshot once
// as one transaction (how it was written before) and once in parts (src/journal/sqliteSnapshots.ts),
// alternated. Prints each run's commit latency (hand-over to durable) over the window from the
// snapshot's hand-over to its end plus 0.5 s: what every order in those batches waited. No engine,
// no HTTP: what it shows is the writer's queue. Usage:
//   node --import tsx bench/snapshotWriteBench.ts [snapshot MB, default 20] [runs per mode, default 2]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { JournalRecord } from '../src/journal/journal.ts';
import { openSqliteJournal } from '../src/journal/sqliteJournal.ts';
import { startJournalWriter } from '../src/journal/workerJournal.ts';
import { MAX_WRITES_IN_FLIGHT } from '../src/sequencer/sequencer.ts';
import { runIfMain } from './support.ts';

/** RECORDS_PER_BATCH order-sized records every BATCH_MS: 5,000 records/s. */
const BATCH_MS = 2;
const RECORDS_PER_BATCH = 10;
const BEFORE_MS = 1_000;
const AFTER_MS = 500;

interface Run {
  mode: 'whole' | 'parts';
  snapshotMs: number;
  commits: number;
  p50: number;
  p99: number;
  max: number;
  over50: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

async function once(mode: 'whole' | 'parts', snapshot: string): Promise<Run> {
  const dir = mkdtempSync(path.join(tmpdir(), 'strikebook-snapwrite-'));
  const reader = openSqliteJournal(dir);
  const writer = await startJournalWriter(dir, () => reader.lastSeq(), mode === 'whole' ? { snapshotPartChars: Number.MAX_SAFE_INTEGER } : {});
  try {
    let seq = 0;
    const cmd = 'p|1|0|BTC-27MAR30-100000-C|0.0125|10000000|limit|gtc|||'.padEnd(100, 'x');
    // as the sequencer batches (src/sequencer/sequencer.ts): records arrive on the schedule, at most
    // MAX_WRITES_IN_FLIGHT batches are with the writer, and whatever arrived meanwhile is the next one
    const latencies: Array<{ at: number; ms: number }> = [];
    let pending: Array<{ rec: JournalRecord; at: number }> = [];
    let writing = 0;
    let durable = 0;
    let drained: () => void = () => undefined;
    const handOver = () => {
      if (writing >= MAX_WRITES_IN_FLIGHT || pending.length === 0) return;
      const batch = pending;
      pending = [];
      writing++;
      void writer.append(batch.map((b) => b.rec)).then(() => {
        const now = performance.now();
        durable = batch.at(-1)!.rec.seq;
        for (const b of batch) latencies.push({ at: b.at, ms: now - b.at });
        writing--;
        handOver();
        if (writing === 0) drained();
      });
    };
    let stop = false;
    const ticker = (async () => {
      while (!stop) {
        const at = performance.now();
        for (let i = 0; i < RECORDS_PER_BATCH; i++) pending.push({ rec: { seq: ++seq, ts: 1_900_000_000_000 + seq, cmd }, at });
        handOver();
        await new Promise((r) => setTimeout(r, BATCH_MS));
      }
    })();
    await new Promise((r) => setTimeout(r, BEFORE_MS));
    const from = performance.now();
    await writer.saveSnapshot(durable, snapshot);
    const snapshotMs = performance.now() - from;
    await new Promise((r) => setTimeout(r, AFTER_MS));
    stop = true;
    await ticker;
    handOver();
    if (writing > 0) await new Promise<void>((r) => (drained = r));
    const window = latencies.filter((l) => l.at >= from).map((l) => l.ms).sort((a, b) => a - b);
    return { mode, snapshotMs, commits: window.length, p50: quantile(window, 0.5), p99: quantile(window, 0.99), max: window.at(-1) ?? 0, over50: window.filter((ms) => ms > 50).length };
  } finally {
    await writer.close();
    reader.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function runSnapshotWriteBench(mb: number, runs: number): Promise<string[]> {
  // JSON-like text of the size a busy venue's state serializes to (22.6 MB per 135,000 orders)
  const unit = '{"id":123456,"u":42,"i":"BTC-27MAR30-100000-C","s":0,"p":"0.0125","l":10000000,"f":0,"t":1900000000000},';
  const snapshot = unit.repeat(Math.ceil((mb * 1024 * 1024) / unit.length));
  const lines: string[] = [];
  for (let r = 0; r < runs; r++) {
    for (const mode of r % 2 === 0 ? (['whole', 'parts'] as const) : (['parts', 'whole'] as const)) {
      const x = await once(mode, snapshot);
      lines.push(`${mode.padEnd(5)} snapshot ${(snapshot.length / 1e6).toFixed(1)} MB written in ${x.snapshotMs.toFixed(0)} ms; ${x.commits} records from its hand-over to 0.5 s after: records' wait p50 ${x.p50.toFixed(1)} ms, p99 ${x.p99.toFixed(1)} ms, max ${x.max.toFixed(1)} ms, ${x.over50} over 50 ms`);
      console.log(lines.at(-1));
    }
  }
  return lines;
}

runIfMain(import.meta.url, async () => {
  await runSnapshotWriteBench(Number(process.argv[2] ?? 20), Number(process.argv[3] ?? 2));
  return { ok: true, lines: [] };
});
