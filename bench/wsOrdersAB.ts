// A/B of the WebSocket orders section (bench/wsOrdersBench.ts) between two checkouts of Strikebook,
// for measuring one lever at a time on a machine whose speed swings 2x within minutes: both servers
// and the echo reference run side by side and are driven in turn (echo, A, B, B, A, echo, ...), so
// every round compares them under nearly the same load.
//
//   node --import tsx bench/wsOrdersAB.ts <dirA> <dirB> [rounds=4] [seconds=5] [--together]
//
// --together drives A and B at the same time instead (each with its 100 connections): both then
// run under the same machine load at every instant and the ratio of their rates is the ratio of
// their costs per order; on a machine shared with other work this was far steadier than turns.
//
// <dir> is a checkout with its node_modules (a `git worktree add --detach` of the base commit with
// node_modules linked from this one will do). Prints each round, then medians per side: messages/s,
// ratio to the echo runs of the same round, and the server process's CPU per answer (the figure
// least disturbed by the other processes on the machine).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { benchAdmin } from './benchAccounts.ts';
import { BOOTSTRAP, benchServerArgs, runIfMain, startScript, startScriptNodeFlags, stopGracefully, waitHttp } from './support.ts';
import { drive, fmt, spawnEchoServer, wsPlans, type WsLoad, type WsPlan } from './wsOrdersBench.ts';

interface Side {
  name: string;
  child: ChildProcess;
  url: string;
  plans: WsPlan[];
  dataDir: string;
  runs: WsLoad[];
  ratios: number[];
}

/** `npm start`'s command (as spawnStrikebook runs it) from another checkout. */
function spawnFrom(root: string, port: number, dataDir: string): ChildProcess {
  // a checkout from before the server bundle starts its sources through tsx
  const script = startScript(root);
  const entry = script.endsWith('.ts') ? ['--import', 'tsx', script] : [script];
  return spawn(process.execPath, [...startScriptNodeFlags(root).filter((f) => f !== '--import' && f !== 'tsx'), ...benchServerArgs(), ...entry], {
    cwd: root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: {
      ...process.env,
      PORT: String(port),
      STRIKEBOOK_DATA_DIR: dataDir,
      STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP,
      STRIKEBOOK_INDEX_FEED: 'manual',
      STRIKEBOOK_DEMO_MAKER: '0',
      STRIKEBOOK_RATE_LIMITS: '0',
      STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '1000',
      LOG_LEVEL: 'warn',
    },
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

export async function runWsOrdersAB(dirA: string, dirB: string, rounds: number, seconds: number, together = false): Promise<{ lines: string[]; ok: boolean }> {
  const port = 31000 + Math.floor(Math.random() * 10000);
  const echo = spawnEchoServer(port);
  const echoUrl = `ws://127.0.0.1:${port}`;
  const sides: Side[] = [];
  const lines: string[] = [];
  try {
    for (const [k, dir] of [dirA, dirB].entries()) {
      const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-wsab-'));
      const p = port + 1 + k;
      const side: Side = { name: k === 0 ? 'A' : 'B', child: spawnFrom(path.resolve(dir), p, dataDir), url: `ws://127.0.0.1:${p}/ws/api/v2`, plans: [], dataDir, runs: [], ratios: [] };
      sides.push(side);
      const base = `http://127.0.0.1:${p}`;
      await waitHttp(`${base}/health`);
      side.plans = await wsPlans(base, await benchAdmin(base));
    }
    const echoPlans = sides[0]!.plans;
    await waitHttp(`http://127.0.0.1:${port}`).catch(() => undefined);
    // warm-up of every process (JIT), not measured
    await drive(echoUrl, echoPlans, 2);
    for (const s of sides) await drive(s.url, s.plans, 2);
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? sides : [...sides].reverse();
      const e1 = await drive(echoUrl, echoPlans, seconds, echo.pid);
      const got = new Map<Side, WsLoad>();
      if (together) {
        // both at once: they share the machine's cores at the same instant, so the load the other
        // engineers put on it weighs on both alike, and the cheaper server answers more
        const both = await Promise.all(sides.map((s) => drive(s.url, s.plans, seconds, s.child.pid)));
        sides.forEach((s, k) => got.set(s, both[k]!));
      } else for (const s of order) got.set(s, await drive(s.url, s.plans, seconds, s.child.pid));
      const e2 = await drive(echoUrl, echoPlans, seconds, echo.pid);
      const echoRate = (e1.perSec + e2.perSec) / 2;
      lines.push(`round ${r + 1}: ${fmt('echo', e1)}`);
      for (const s of sides) {
        const x = got.get(s)!;
        s.runs.push(x);
        s.ratios.push(x.perSec / echoRate);
        lines.push(`round ${r + 1}: ${fmt(s.name, x)}  ratio ${(x.perSec / echoRate).toFixed(3)}`);
      }
      lines.push(`round ${r + 1}: ${fmt('echo', e2)}`);
    }
    for (const s of sides) {
      lines.push(
        `${s.name} (${s.name === 'A' ? dirA : dirB}): median ${Math.round(median(s.runs.map((x) => x.perSec)))} msg/s, ratio ${median(s.ratios).toFixed(3)}, ` +
          `server CPU ${median(s.runs.map((x) => x.serverCpuUs)).toFixed(1)} us/answer (main thread ${median(s.runs.map((x) => x.engineCpuUs)).toFixed(1)}), errors ${s.runs.reduce((a, x) => a + x.errors, 0)}`,
      );
    }
    const [a, b] = sides;
    const perRound = b!.runs.map((x, r) => x.perSec / a!.runs[r]!.perSec);
    lines.push(`B/A per round: ${perRound.map((x) => x.toFixed(3)).join(' ')}`);
    lines.push(`B/A: msg/s ${(median(b!.runs.map((x) => x.perSec)) / median(a!.runs.map((x) => x.perSec))).toFixed(3)}, server CPU per answer ${(median(b!.runs.map((x) => x.serverCpuUs)) / median(a!.runs.map((x) => x.serverCpuUs))).toFixed(3)}, main thread ${(median(b!.runs.map((x) => x.engineCpuUs)) / median(a!.runs.map((x) => x.engineCpuUs))).toFixed(3)}`);
    return { lines, ok: true };
  } finally {
    for (const s of sides) {
      await stopGracefully(s.child);
      rmSync(s.dataDir, { recursive: true, force: true });
    }
    echo.kill('SIGKILL');
  }
}

runIfMain(import.meta.url, () => {
  const args = process.argv.slice(2).filter((x) => x !== '--together');
  const [a, b, rounds, seconds] = args;
  if (a === undefined || b === undefined) throw new Error('usage: bench/wsOrdersAB.ts <dirA> <dirB> [rounds] [seconds] [--together]');
  return runWsOrdersAB(a, b, Number(rounds ?? 4), Number(seconds ?? 5), process.argv.includes('--together'));
});
