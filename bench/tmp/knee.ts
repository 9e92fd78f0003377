// Open loop at fixed rates: where is the knee? server CPU per request, generator CPU.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openLoop } from '../openLoop.ts';
import { prepare } from '../openLoopBench.ts';
import { CONNECTIONS } from '../benchAccounts.ts';
import { benchServerArgs, processCpuSeconds, spawnStrikebook, stopGracefully, waitHttp } from '../support.ts';

const port = 23000 + Math.floor(Math.random() * 1000);
const base = `http://127.0.0.1:${port}`;
const server = spawnStrikebook(port, mkdtempSync(path.join(tmpdir(), 'knee-')), benchServerArgs(), { STRIKEBOOK_INDEX_FEED: 'simulated', ...(process.env.EXTRA ? JSON.parse(process.env.EXTRA) : {}) });
await waitHttp(`${base}/health`);
const { plans } = await prepare(base);
const steps = plans.flat();
for (const rate of (process.env.RATES ?? '8000,10000,12000,14000,10000').split(',').map(Number)) {
  const c0 = processCpuSeconds(server.pid);
  const g0 = process.cpuUsage();
  const r = await openLoop(port, steps, { ratePerSec: rate, seconds: Number(process.env.SECS ?? 5), connections: CONNECTIONS });
  const g = process.cpuUsage(g0);
  const c1 = processCpuSeconds(server.pid);
  console.log(`rate ${rate}: p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(1)} max ${r.max.toFixed(0)} ms; server CPU ${(((c1! - c0!) * 1e6) / r.answered).toFixed(1)} us/req (${((c1! - c0!) / Number(process.env.SECS ?? 5)).toFixed(2)} cores); generator ${((g.user + g.system) / 1e6 / Number(process.env.SECS ?? 5)).toFixed(2)} cores`);
}
await stopGracefully(server);
process.exit(0);
