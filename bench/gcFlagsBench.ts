// Which V8 heap flags suit the server (issue 16): two or more servers, one per flag set, hold the
// open-loop section's state (1,400 instruments, 10,000 resting orders, 2,000 positions, simulated
// index feed) and take the same open-loop crossing orders in turns (A, B, A, B...), so every flag set
// sees the same machine load. Per set: order latency from the schedule, the largest event-loop
// delay and its CPU-bounded part, and GC pauses by kind per 1,000 orders.
//
//   node --import tsx bench/gcFlagsBench.ts [rate=600] [rounds=3] [seconds=10] '' '--no-parallel-scavenge --max-semi-space-size=8' ...
//
// Each further argument is one flag set (words split on spaces), added after `npm start`'s own node
// flags if it has any (a later flag wins): '' is `npm start` as it is.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { CONNECTIONS } from './benchAccounts.ts';
import type { LeanStep } from './leanLoad.ts';
import { openLoop } from './openLoop.ts';
import { above, grownSum, prepare, worstBucket } from './openLoopBench.ts';
import { runIfMain, spawnStrikebook, stopGracefully, waitHttp } from './support.ts';

interface Tally {
  flags: string;
  orders: number;
  latencies: number[];
  delayOver: number;
  delayWorst: string[];
  busyWorst: string[];
  gc: Map<string, { pauses: number; ms: number; over: number; worst: string[] }>;
}

export async function runGcFlagsBench(rate: number, rounds: number, seconds: number, flagSets: string[]): Promise<{ lines: string[]; ok: boolean }> {
  const servers: Array<{ port: number; dir: string; child: ChildProcess; tally: Tally; steps: LeanStep[] }> = [];
  const basePort = 21000 + Math.floor(Math.random() * 10000);
  try {
    await Promise.all(
      flagSets.map(async (flags, i) => {
        const port = basePort + i;
        const dir = mkdtempSync(path.join(tmpdir(), 'strikebook-gcflags-'));
        const child = spawnStrikebook(port, dir, flags.split(/\s+/).filter(Boolean), { STRIKEBOOK_INDEX_FEED: 'simulated' });
        const tally: Tally = { flags: flags || '(npm start)', orders: 0, latencies: [], delayOver: 0, delayWorst: [], busyWorst: [], gc: new Map() };
        // kept before anything can fail, so that `finally` stops every server started
        const server = { port, dir, child, tally, steps: [] as LeanStep[] };
        servers[i] = server;
        const base = `http://127.0.0.1:${port}`;
        // several servers starting at once on a loaded machine take longer than waitHttp's 30 s
        for (let tries = 0; ; tries++) {
          try {
            await waitHttp(`${base}/health`);
            break;
          } catch (err) {
            if (tries >= 3) throw err;
          }
        }
        server.steps = (await prepare(base)).plans.flat();
      }),
    );
    for (let r = 0; r < rounds; r++) {
      for (const s of servers) {
        const metrics = () => fetch(`http://127.0.0.1:${s.port}/metrics`).then((x) => x.text());
        const before = await metrics();
        const res = await openLoop(s.port, s.steps, { ratePerSec: rate, seconds, connections: CONNECTIONS });
        const after = await metrics();
        const t = s.tally;
        t.orders += res.answered;
        t.latencies.push(...res.latenciesMs);
        t.delayOver += above(before, after, 'strikebook_event_loop_delay_seconds', '0.002').over;
        t.delayWorst.push(worstBucket(before, after, 'strikebook_event_loop_delay_seconds'));
        t.busyWorst.push(worstBucket(before, after, 'strikebook_event_loop_busy_seconds'));
        for (const kind of ['minor', 'major', 'incremental']) {
          const g = above(before, after, 'nodejs_gc_duration_seconds', '0.002', `kind="${kind}"`);
          const e = t.gc.get(kind) ?? { pauses: 0, ms: 0, over: 0, worst: [] };
          e.pauses += g.all;
          e.over += g.over;
          e.ms += grownSum(before, after, 'nodejs_gc_duration_seconds', `kind="${kind}"`) * 1000;
          if (g.all > 0) e.worst.push(worstBucket(before, after, 'nodejs_gc_duration_seconds', `kind="${kind}"`));
          t.gc.set(kind, e);
        }
      }
    }
    const lines = [`${rounds} rounds of ${seconds} s at ${rate} orders/s per server, in turns`];
    for (const { tally: t } of servers) {
      const l = t.latencies.sort((a, b) => a - b);
      const at = (q: number) => l[Math.min(l.length - 1, Math.floor(l.length * q))]!.toFixed(1);
      lines.push(`[${t.flags}] ${t.orders} orders: p50 ${at(0.5)} ms p99 ${at(0.99)} ms max ${at(1)} ms; delay samples > 2 ms ${t.delayOver}; largest delay per round ${t.delayWorst.join(' | ')}; busy ${t.busyWorst.join(' | ')}`);
      for (const [kind, g] of t.gc) {
        if (g.pauses > 0) lines.push(`    GC ${kind.padEnd(12)} ${((g.pauses * 1000) / t.orders).toFixed(1)} pauses and ${((g.ms * 1000) / t.orders).toFixed(1)} ms per 1,000 orders, ${g.over} of ${g.pauses} over 2 ms, mean ${(g.ms / g.pauses).toFixed(2)} ms, longest per round ${g.worst.join(' | ')}`);
      }
    }
    return { lines, ok: true };
  } finally {
    await Promise.all(servers.filter(Boolean).map(async (s) => {
      await stopGracefully(s.child);
      rmSync(s.dir, { recursive: true, force: true });
    }));
  }
}

runIfMain(import.meta.url, () => {
  const [rate = '600', rounds = '3', seconds = '10', ...sets] = process.argv.slice(2);
  return runGcFlagsBench(Number(rate), Number(rounds), Number(seconds), sets.length > 0 ? sets : ['', '--no-parallel-scavenge --max-semi-space-size=8']);
});
