// A child process for test/app/threadPriority.test.ts: lowers the priority of all its threads,
// reports its pid and the nice it got, then waits to be killed (so that its /proc entries can be read).
import { lowerThisProcessPriority } from '../../src/app/threadPriority.ts';

const nice = lowerThisProcessPriority();
process.send!({ pid: process.pid, nice });
setInterval(() => undefined, 1_000);
