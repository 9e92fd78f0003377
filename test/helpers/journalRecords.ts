// Journal records for the journal adapters' tests: no-op commands with a fixed timestamp per seq
// (no clock), so two runs write the same bytes.
import type { Sequenced } from '../../src/engine/commands.ts';
import type { JournalRecord } from '../../src/journal/journal.ts';

/** A no-op record at `seq`; `fields` are added to its command (text the adapter must carry unchanged). */
export function noopRecord(seq: number, fields: Record<string, unknown> = {}): JournalRecord {
  return { seq, ts: 1_700_000_000_000 + seq, cmd: JSON.stringify({ t: 'noop', n: seq, ...fields }) };
}

/** The records `from` to `to`, both included, each made by `make`. */
export function noopRecords(from: number, to: number, make: (seq: number) => JournalRecord = noopRecord): JournalRecord[] {
  const out: JournalRecord[] = [];
  for (let s = from; s <= to; s++) out.push(make(s));
  return out;
}

/** The journal records of commands an engine applied (a `recordedEngine` story), as the server writes them. */
export function recordsOf(story: readonly Sequenced[]): JournalRecord[] {
  return story.map((c) => ({ seq: c.seq, ts: c.ts, cmd: JSON.stringify(c) }));
}
