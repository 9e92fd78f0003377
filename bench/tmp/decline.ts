// Throughput over time: is there a decline as state grows? closed loop, 5 s windows, server CPU per request.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runLoad } from '../httpBench.ts';
import { prepare } from '../openLoopBench.ts';
import { benchServerArgs, processCpuSeconds, spawnStrikebook, stopGracefully, waitHttp } from '../support.ts';

const port = 23000 + Math.floor(Math.random() * 1000);
const base = `http://127.0.0.1:${port}`;
const server = spawnStrikebook(port, mkdtempSync(path.join(tmpdir(), 'decl-')), benchServerArgs(), { STRIKEBOOK_INDEX_FEED: 'simulated', ...(process.env.EXTRA ? JSON.parse(process.env.EXTRA) : {}) });
await waitHttp(`${base}/health`);
const { plans } = await prepare(base);
for (let w = 0; w < Number(process.env.WINDOWS ?? 10); w++) {
  const c0 = processCpuSeconds(server.pid);
  const r = await runLoad({ url: base, plans, seconds: 5 });
  const c1 = processCpuSeconds(server.pid);
  const mem = await fetch(`${base}/metrics`).then((x) => x.text());
  const heap = /^nodejs_heap_size_used_bytes (\S+)$/m.exec(mem)?.[1];
  console.log(`window ${w}: ${Math.round(r.rps)} req/s p99 ${r.p99} ms; server CPU ${(((c1! - c0!) * 1e6) / (r.rps * 5)).toFixed(1)} us/req; heap used ${(Number(heap) / 1e6).toFixed(0)} MB`);
}
await stopGracefully(server);
process.exit(0);
