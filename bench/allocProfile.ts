// Where the server's garbage comes from (issue 16): the engine thread's allocations per crossing
// order over HTTP, by function. Scavenges run once the young generation fills, so the bytes an
// order allocates set how often the engine thread stops for them; this names what to cut.
//
//   node --import tsx bench/allocProfile.ts [seconds=8] [top=30] [--live] [--ws]
//
// With --ws the orders come over WebSocket instead, as in the WebSocket orders section
// (bench/wsOrdersBench.ts: 100 connections, 8 requests outstanding on each).
// With --live only what is still alive after the load (and a full GC) is counted: what each order
// leaves behind, which is what scavenges copy and major GCs mark.
// The server runs with --inspect on a loopback port; V8's sampling heap profiler is started over
// the DevTools protocol with the objects collected by minor and major GCs kept in the samples (by
// default it reports only what is still alive), during a closed-loop load of crossing orders from
// the lean load generator. Prints bytes per order in all, then the top allocating functions (self).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { benchAdmin, crossingPlans, tradableBooks } from './benchAccounts.ts';
import { leanLoad } from './leanLoad.ts';
import { runIfMain, spawnStrikebook, stopGracefully, waitHttp } from './support.ts';
import { drive, wsPlans } from './wsOrdersBench.ts';

interface ProfileNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: ProfileNode[];
}

/** A minimal DevTools protocol client: one request at a time is all this needs. */
async function devtools(port: number): Promise<{ send: (method: string, params?: object) => Promise<any>; close: () => void }> {
  let targets: Array<{ webSocketDebuggerUrl: string }> = [];
  for (let i = 0; i < 50 && targets.length === 0; i++) {
    targets = await fetch(`http://127.0.0.1:${port}/json/list`).then((r) => r.json() as Promise<typeof targets>).catch(() => []);
    if (targets.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
  const ws = new WebSocket(targets[0]!.webSocketDebuggerUrl, { maxPayload: 1 << 30 });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  let id = 0;
  const waiting = new Map<number, (v: any) => void>();
  ws.on('message', (d) => {
    const m = JSON.parse(d.toString()) as { id?: number; result?: unknown; error?: unknown };
    if (m.id !== undefined) waiting.get(m.id)?.(m.error ? Promise.reject(new Error(JSON.stringify(m.error))) : m.result);
  });
  return {
    send: (method, params = {}) =>
      new Promise((resolve) => {
        waiting.set(++id, resolve);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

function selfSizes(root: ProfileNode): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (n: ProfileNode) => {
    const f = n.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
    out.set(key, (out.get(key) ?? 0) + n.selfSize);
    for (const c of n.children) walk(c);
  };
  walk(root);
  return out;
}

export async function runAllocProfile(seconds = 8, top = 30, live = false, ws = false): Promise<{ lines: string[]; ok: boolean }> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'strikebook-alloc-'));
  const port = 21000 + Math.floor(Math.random() * 10000);
  const inspectPort = port + 1;
  const base = `http://127.0.0.1:${port}`;
  const server = spawnStrikebook(port, dataDir, [`--inspect=127.0.0.1:${inspectPort}`], { STRIKEBOOK_WS_MAX_CONNECTIONS_PER_IP: '1000' });
  const wsUrl = `ws://127.0.0.1:${port}/ws/api/v2`;
  const lines: string[] = [];
  try {
    await waitHttp(`${base}/health`);
    const admin = await benchAdmin(base);
    const plans = ws ? [] : await crossingPlans(base, admin, (await tradableBooks(base)).slice(0, 10));
    const frames = ws ? await wsPlans(base, admin) : [];
    // warm up: compiled code, caches, pools
    if (ws) await drive(wsUrl, frames, 2);
    else await leanLoad(port, plans, 2);
    const dt = await devtools(inspectPort);
    await dt.send('HeapProfiler.enable');
    await dt.send('HeapProfiler.collectGarbage');
    await dt.send('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: !live, includeObjectsCollectedByMinorGC: !live });
    const orders = ws ? (await drive(wsUrl, frames, seconds)).messages : Math.round((await leanLoad(port, plans, seconds)).rps * seconds);
    if (live) {
      await new Promise((r) => setTimeout(r, 500)); // the last batches' replies are out
      await dt.send('HeapProfiler.collectGarbage');
    }
    const { profile } = (await dt.send('HeapProfiler.stopSampling')) as { profile: { head: ProfileNode } };
    dt.close();
    const sizes = [...selfSizes(profile.head)].sort((a, b) => b[1] - a[1]);
    const total = sizes.reduce((s, [, v]) => s + v, 0);
    const what = live ? 'still alive after the load, per order' : 'allocated per order on the engine thread';
    lines.push(`${orders} crossing orders over ${ws ? 'WebSocket' : 'HTTP'} in ${seconds} s: ${(total / orders / 1024).toFixed(2)} KiB ${what} (sampled every 1 KiB)`);
    for (const [k, v] of sizes.slice(0, top)) lines.push(`  ${(v / orders).toFixed(0).padStart(6)} B/order  ${((v / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
    return { lines, ok: true };
  } finally {
    await stopGracefully(server);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => {
  const args = process.argv.slice(2).filter((a) => a !== '--live' && a !== '--ws');
  return runAllocProfile(Number(args[0] ?? 8), Number(args[1] ?? 30), process.argv.includes('--live'), process.argv.includes('--ws'));
});
