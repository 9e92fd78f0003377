// A process that writes one snapshot through the journal writer thread in small parts and SIGKILLs
// itself right after part `killAfter` is written (or after the snapshot is complete, with -1): the
// crash of test/journal/snapshotParts.test.ts, mid-snapshot-write as a real server would die.
// Usage: node --import tsx test/helpers/snapshotPartsChild.ts <dataDir> <snapshotFile> <seq> <partChars> <killAfter>
import { readFileSync } from 'node:fs';
import { openSqliteJournal } from '../../src/journal/sqliteJournal.ts';
import { startJournalWriter } from '../../src/journal/workerJournal.ts';

const [dir, file, seqText, partText, killText] = process.argv.slice(2);
const seq = Number(seqText);
const killAfter = Number(killText);
const reader = openSqliteJournal(dir!);
const writer = await startJournalWriter(dir!, () => reader.lastSeq(), {
  snapshotPartChars: Number(partText),
  onSnapshotPart: (_seq, part) => {
    if (part === killAfter) process.kill(process.pid, 'SIGKILL');
  },
});
await writer.saveSnapshot(seq, readFileSync(file!, 'utf8'));
process.kill(process.pid, 'SIGKILL');
