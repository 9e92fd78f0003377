// A process that writes one snapshot in parts through the PostgreSQL journal and SIGKILLs itself
// right after part `killAfter` is written: the crash of test/journal/postgresSnapshots.test.ts,
// mid-snapshot-write as a real leader would die (its session ends without releasing the lease).
// Usage: node --import tsx test/helpers/pgSnapshotPartsChild.ts <databaseUrl> <snapshotFile> <seq> <partChars> <killAfter> <leaseMs> <renewMs>
import { readFileSync } from 'node:fs';
import { openPostgresJournal } from '../../src/journal/postgresJournal.ts';
import { encodeSnapshotParts } from '../../src/journal/snapshotParts.ts';

const [url, file, seqText, partText, killText, leaseText, renewText] = process.argv.slice(2);
const killAfter = Number(killText);
const journal = await openPostgresJournal(url!, {
  lease: { leaseMs: Number(leaseText), renewMs: Number(renewText) },
  onSnapshotPart: (_seq, part) => {
    if (part === killAfter) process.kill(process.pid, 'SIGKILL');
  },
});
await journal.saveSnapshotParts(Number(seqText), encodeSnapshotParts(readFileSync(file!, 'utf8'), Number(partText)));
process.kill(process.pid, 'SIGKILL');
