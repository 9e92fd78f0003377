// An in-memory Journal for sequencer and recovery tests: it keeps every append as a separate batch
// (to observe group commit), checks contiguity like the real adapters, and lets a test hook into or
// fail an append.
import type { Journal, JournalRecord } from '../../src/journal/journal.ts';

export class MemoryJournal implements Journal {
  records: JournalRecord[] = [];
  /** One entry per append() call that succeeded: the seqs it wrote. */
  batches: number[][] = [];
  snapshots: { seq: number; data: string }[] = [];
  meta = new Map<string, string>();
  /** Runs inside append() before the records are stored; throwing from it fails the append. */
  beforeAppend: ((records: JournalRecord[]) => void) | null = null;
  appendCalls = 0;

  append(records: JournalRecord[]): void {
    this.appendCalls++;
    this.beforeAppend?.(records);
    let expected = this.lastSeq() + 1;
    for (const r of records) {
      if (r.seq !== expected) throw new Error(`journal: seq ${r.seq} does not follow ${expected - 1}`);
      expected++;
    }
    this.records.push(...records.map((r) => ({ ...r })));
    this.batches.push(records.map((r) => r.seq));
  }

  *readAfter(afterSeq: number): IterableIterator<JournalRecord> {
    for (const r of this.records) if (r.seq > afterSeq) yield r;
  }

  lastSeq(): number {
    return this.records.length === 0 ? 0 : this.records[this.records.length - 1]!.seq;
  }

  saveSnapshot(seq: number, data: string): void {
    if (seq > this.lastSeq()) throw new Error(`journal: snapshot seq ${seq} is past the last journaled seq ${this.lastSeq()}`);
    this.snapshots.push({ seq, data });
  }

  latestSnapshot(): { seq: number; data: string } | null {
    return this.snapshots.length === 0 ? null : this.snapshots[this.snapshots.length - 1]!;
  }

  getMeta(key: string): string | null {
    return this.meta.get(key) ?? null;
  }

  setMeta(key: string, value: string): void {
    this.meta.set(key, value);
  }

  close(): void {}
}
