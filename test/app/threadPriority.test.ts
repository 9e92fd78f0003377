// A background thread lowers its own CPU priority, and only its own (src/app/threadPriority.ts):
// the background snapshot's thread runs at nice 19 so that its replay takes the cores the engine
// thread leaves idle. Read back from the scheduler's own account (/proc/<pid>/task/<tid>/stat).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { once } from 'node:events';
import { startTsWorker } from '../../src/journal/tsWorker.ts';
import { BACKGROUND_NICE, currentThreadId } from '../../src/app/threadPriority.ts';

/** A thread's nice value, field 19 of its stat line (after the parenthesized command name). */
function threadNice(tid: number): number {
  const stat = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

const skip = process.platform !== 'linux' || !existsSync('/proc/thread-self') ? 'per-thread nice values are read from Linux /proc' : undefined;
if (skip) console.log(`# skipping: ${skip}`);

test('a worker lowers its own priority to nice 19, and the process and the main thread keep theirs', { skip, timeout: 60_000 }, async () => {
  const mainTid = currentThreadId();
  assert.equal(mainTid, process.pid, "the main thread's id is the process id");
  const mainBefore = threadNice(mainTid!);
  const processBefore = os.getPriority();
  const worker = startTsWorker(new URL('../helpers/lowPriorityWorker.ts', import.meta.url), null);
  try {
    const [report] = (await once(worker, 'message')) as [{ tid: number | null; nice: number | null }];
    assert.ok(report.tid !== null && report.tid !== mainTid, `the worker has a thread id of its own: ${report.tid}`);
    assert.equal(report.nice, BACKGROUND_NICE, 'the worker reports the priority it now runs at');
    assert.equal(threadNice(report.tid), BACKGROUND_NICE, "the scheduler's account of the worker thread agrees");
    assert.equal(threadNice(mainTid!), mainBefore, "the main thread's priority is unchanged");
    assert.equal(os.getPriority(), processBefore, "the process's priority is unchanged");
  } finally {
    await worker.terminate();
  }
});
