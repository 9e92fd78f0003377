// A background process lowers the CPU priority of every one of its threads (src/app/
// threadPriority.ts): the background snapshot's process runs at nice 19 so that its replay, and the
// collections of its garbage on V8's own threads, take the cores the engine thread leaves idle.
// Read back from the scheduler's own account (/proc/<pid>/task/<tid>/stat).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import os from 'node:os';
import { once } from 'node:events';
import { startTsProcess } from '../../src/journal/tsWorker.ts';
import { BACKGROUND_NICE } from '../../src/app/threadPriority.ts';

/** The nice value of every thread of `pid`: field 19 of each stat line (after the parenthesized command name). */
function threadNices(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

const skip = process.platform !== 'linux' || !existsSync('/proc/self/task') ? 'per-thread nice values are read from Linux /proc' : undefined;
if (skip) console.log(`# skipping: ${skip}`);

test("a background process lowers every one of its threads to nice 19, V8's included; this process keeps its priority", { skip, timeout: 60_000 }, async () => {
  const before = threadNices(process.pid);
  const processBefore = os.getPriority();
  const child = startTsProcess(new URL('../helpers/lowPriorityProcess.ts', import.meta.url));
  try {
    const [report] = (await once(child, 'message')) as [{ pid: number; nice: number | null }];
    assert.equal(report.pid, child.pid);
    assert.equal(report.nice, BACKGROUND_NICE, 'the process reports the highest nice among its threads');
    const nices = threadNices(report.pid);
    // node's main thread and V8's platform threads (4 by default) at least
    assert.ok(nices.length >= 5, `${nices.length} threads`);
    assert.deepEqual(nices, nices.map(() => BACKGROUND_NICE), "the scheduler's account of every thread agrees");
    assert.deepEqual(threadNices(process.pid).slice(0, before.length), before, "this process's threads keep their priorities");
    assert.equal(os.getPriority(), processBefore);
  } finally {
    child.kill('SIGKILL');
  }
});
