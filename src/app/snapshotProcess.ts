// A background snapshot's process (see backgroundSnapshots.ts): builds the snapshot as of one
// durable seq from the journal itself (snapshotBuild.ts) and sends the text back over its IPC
// channel. It reads on connections of its own and writes nothing: the snapshot is saved by the
// journal's one writer.
//
// Why a process and not a thread (issue 36): the replay allocates as a live engine does, and its
// garbage is collected by V8's platform threads. In a worker thread those were the server's own,
// shared with the engine thread's isolate and at its priority, so a snapshot at nice 19 still took
// ~1.5 s of a core at nice 0 (its collections) from the engine over a 5 s build. A process has its
// own, and lowers every one of its threads (threadPriority.ts lowerThisProcessPriority).
import { encodeSnapshotParts } from '../journal/snapshotParts.ts';
import { SnapshotNoLongerWanted, buildSnapshot, type SnapshotJob } from './snapshotBuild.ts';
import { lowerThisProcessPriority } from './threadPriority.ts';

/**
 * What the process sends, in order: the job's parts, one message each (the UTF-8 bytes of the text,
 * cut where snapshotParts.ts cuts; one message of the whole text would be read and decoded by the
 * engine thread in one go), then its outcome. `parts` counts the part messages before it and is
 * null when a snapshot at or past `seq` exists already; `chars` is the text's length in UTF-16 code
 * units. `nice` is the highest priority value any of its threads ran at (null: the platform could
 * not lower them).
 */
export type SnapshotMessage =
  | { part: Uint8Array }
  | { ok: true; seq: number; parts: number | null; chars: number; nice: number | null }
  | { ok: false; message: string };

/** Sends one message and waits until it is handed to the channel (a part is not queued in full here). */
function send(m: SnapshotMessage): Promise<void> {
  return new Promise((resolve, reject) => process.send!(m, undefined, undefined, (err) => (err ? reject(err) : resolve())));
}

async function run(job: SnapshotJob): Promise<void> {
  // no deadline: the replay takes only what the engine thread and the journal's writer leave idle
  const nice = lowerThisProcessPriority();
  // The server's pid, read before the build: a killed server's children are re-parented (to init or
  // a subreaper), and the 'disconnect' event below is not seen while the replay holds the thread.
  const serverPid = process.ppid;
  try {
    const text = await buildSnapshot(job, () => process.ppid === serverPid);
    const parts = text === null ? null : encodeSnapshotParts(text, job.partChars);
    for (const part of parts ?? []) await send({ part });
    await send({ ok: true, seq: job.seq, parts: parts?.length ?? null, chars: text?.length ?? 0, nice });
  } catch (err) {
    if (err instanceof SnapshotNoLongerWanted) process.exit(0);
    await send({ ok: false, message: err instanceof Error ? err.message : String(err) });
  }
  process.disconnect();
}

if (process.send === undefined) throw new Error('snapshotProcess runs as a child process of the server (backgroundSnapshots.ts)');
// the server gone (its channel closed): nobody is left to save the snapshot
process.once('disconnect', () => process.exit(0));
process.once('message', (job: SnapshotJob) => void run(job));
