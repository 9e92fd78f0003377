// Shared pieces of the HTTP benchmarks: child processes for the server under test and the bare
// node:http reference, waiting for them, and a JSON-RPC call for setup.
import { execFileSync, fork, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LATENCY_BOUNDS_S } from '../src/app/latencyHistogram.ts';
import { SAMPLE_EVERY_MS } from '../src/app/loopStalls.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BOOTSTRAP = 'bench-bootstrap-token-0123456789';

/** What one load run measured (autocannon or bench/leanLoad.ts); latencies in ms. */
export interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
}

/** How many slices each server's measured time is cut into by `alternated`. */
export const ALTERNATED_SLICES = 4;

/** One server's slices from `alternated`: pooled, with its CPU per request and the load generator's. */
export interface Alternated<R extends LoadResult> {
  slices: R[];
  /** the slices pooled: requests over time; p50 and p99 the worst slice's */
  pooled: LoadResult;
  server: string;
  client: string;
}

/**
 * Closed-loop loads on two servers in alternated slices (a, b, b, a, a, b, b, a), `seconds` in all
 * for each, after a 2 s warm-up of each, so that a change of the machine's speed during a section
 * hits both alike. Run back to back (the bare server's 10 s, then Strikebook's), the durable-orders
 * ratio of the same code ranged 0.52-0.89 within an hour on these machines. Rates are pooled
 * (requests over time); a latency percentile is the worst slice's: load generators report
 * percentiles, not their samples.
 */
export async function alternated<R extends LoadResult>(
  a: { run: (seconds: number) => Promise<R>; pid: number | undefined },
  b: { run: (seconds: number) => Promise<R>; pid: number | undefined },
  seconds: number,
): Promise<{ a: Alternated<R>; b: Alternated<R> }> {
  await a.run(2);
  await b.run(2);
  const slices: { a: R[]; b: R[] } = { a: [], b: [] };
  // seconds over the slices; null once a process's CPU could not be read
  const cpu: Record<'a' | 'b', { server: number | null; client: number }> = { a: { server: 0, client: 0 }, b: { server: 0, client: 0 } };
  for (let slice = 0; slice < ALTERNATED_SLICES; slice++) {
    for (const which of slice % 2 === 0 ? (['a', 'b'] as const) : (['b', 'a'] as const)) {
      const side = which === 'a' ? a : b;
      const server0 = processCpuSeconds(side.pid);
      const client0 = process.cpuUsage();
      slices[which].push(await side.run(seconds / ALTERNATED_SLICES));
      const client = process.cpuUsage(client0);
      const server1 = processCpuSeconds(side.pid);
      const used = cpu[which].server;
      cpu[which].server = used === null || server0 === null || server1 === null ? null : used + server1 - server0;
      cpu[which].client += (client.user + client.system) / 1e6;
    }
  }
  const pool = (which: 'a' | 'b'): Alternated<R> => {
    const rs = slices[which];
    const total = rs.reduce((n, r) => n + r.total, 0);
    return {
      slices: rs,
      pooled: {
        rps: total / seconds,
        p50: Math.max(...rs.map((r) => r.p50)),
        p99: Math.max(...rs.map((r) => r.p99)),
        total,
        non2xx: rs.reduce((n, r) => n + r.non2xx, 0),
        errors: rs.reduce((n, r) => n + r.errors, 0),
      },
      server: cpuPerRequest(0, cpu[which].server, total),
      client: cpuPerRequest(0, cpu[which].client, total),
    };
  };
  return { a: pool('a'), b: pool('b') };
}

export function spawnNode(args: string[], env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
}

/** A TCP port that was free a moment ago, picked by the OS (a port computed from the pid could be
 *  in the ephemeral range and taken by an outgoing connection: the failover section once failed so). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export async function waitHttp(url: string): Promise<void> {
  // a cold start (tsx compiling every module) took 35 s on a 2-core machine at load 25
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    try {
      await fetch(url);
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`nothing listening at ${url}`);
}

/** A JSON-RPC call by POST that throws on an error reply (benchmark setup only). */
export async function call(base: string, method: string, params: Record<string, unknown>, token?: string): Promise<any> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token) headers.authorization = `Bearer ${token}`;
  const r = await fetch(`${base}/v1/${method}`, { method: 'POST', headers, body: JSON.stringify(params) });
  const body = (await r.json()) as any;
  if (body.error) throw new Error(`${method}: ${JSON.stringify(body.error)}`);
  return body.result;
}

/** `npm start`'s command after `node`: its node flags (V8 heap settings, if any) and its script. */
function startScriptWords(root = ROOT): string[] {
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  // `exec node <flags> dist/server/main.js`: npm start execs node so that SIGTERM reaches it
  const words = pkg.scripts.start.split(/\s+/).filter((w) => w !== 'exec');
  return words.slice(words.indexOf('node') + 1);
}

/** The node flags of `npm start` (V8 heap settings), so that the benchmarks run what users run. */
export function startScriptNodeFlags(root = ROOT): string[] {
  return startScriptWords(root).filter((w) => w.startsWith('-'));
}

/** The script `npm start` runs (the server bundle, scripts/buildServer.ts), built first when stale,
 *  as npm start's prestart builds it. */
export function startScript(root = ROOT): string {
  const words = startScriptWords(root);
  const script = words[words.length - 1]!;
  if (script.endsWith('.js')) execFileSync(process.execPath, ['--import', 'tsx', 'scripts/buildServer.ts', '--if-stale'], { cwd: root, stdio: 'inherit' });
  return script;
}

/**
 * The server under test: `npm start`'s command on a fresh data dir, manual index, no demo maker;
 * `env` overrides those settings.
 */
export function spawnStrikebook(port: number, dataDir: string, nodeArgs: string[] = [], env: Record<string, string> = {}): ChildProcess {
  return spawnNode([...startScriptNodeFlags(), ...nodeArgs, startScript()], {
    PORT: String(port),
    STRIKEBOOK_DATA_DIR: dataDir,
    STRIKEBOOK_BOOTSTRAP_TOKEN: BOOTSTRAP,
    STRIKEBOOK_INDEX_FEED: 'manual',
    STRIKEBOOK_DEMO_MAKER: '0',
    // the benches flood from one user and one IP on purpose: they measure speed, not fairness
    STRIKEBOOK_RATE_LIMITS: '0',
    LOG_LEVEL: 'warn',
    ...env,
  });
}

/** Node flags for the server under test from BENCH_SERVER_ARGS (e.g. "--cpu-prof --cpu-prof-dir=prof"). */
export function benchServerArgs(): string[] {
  return process.env.BENCH_SERVER_ARGS ? process.env.BENCH_SERVER_ARGS.split(/\s+/).filter(Boolean) : [];
}

/** Stops a server as `kill` would, so a --cpu-prof profile is written; SIGKILL after 10 s. */
export async function stopGracefully(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(force);
}

/**
 * The reference: a bare node:http server that reads the request and answers a constant body; with
 * `spinMicros`, it first spends that much CPU per request (bench/calibrate.ts). With `stalls`, it
 * also runs the server's own event-loop sampler (src/app/loopStalls.ts: a timer due every 2 ms, how
 * late it fired) and answers `GET /metrics` with that histogram under the server's metric name, so
 * that a section reads both servers' stalls with the same code (bench/openLoopBench.ts): the
 * platform's own stalls on the same schedule, beside the server's.
 */
export function spawnBareServer(port: number, body: string, spinMicros = 0, opts: { stalls?: boolean } = {}): ChildProcess {
  const spin = spinMicros > 0 ? `const until = process.hrtime.bigint() + ${spinMicros * 1000}n; while (process.hrtime.bigint() < until);` : '';
  const sampler = opts.stalls === true ? bareStallSampler() : '';
  const metricsRoute = opts.stalls === true ? `if (req.url === '/metrics') { req.resume(); res.end(stallText()); return; }` : '';
  const source = `
const http = require('node:http');
const body = ${JSON.stringify(body)};
${sampler}
http.createServer((req, res) => {
  ${metricsRoute}
  req.resume();
  req.on('end', () => { ${spin} res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }); res.end(body); });
}).listen(${port}, '127.0.0.1');
`;
  return spawnNode(['-e', source], {});
}

/**
 * The sampler of src/app/loopStalls.ts (its interval, its rescheduling, the same bucket bounds) as
 * source for the bare server, and `stallText()` writing it as the server writes
 * `strikebook_event_loop_delay_seconds`.
 */
function bareStallSampler(): string {
  return `
const bounds = ${JSON.stringify(LATENCY_BOUNDS_S)};
const counts = new Float64Array(bounds.length + 1);
let due = performance.now() + ${SAMPLE_EVERY_MS};
setInterval(() => {
  const now = performance.now();
  const s = Math.max(0, now - due) / 1000;
  let i = 0;
  while (i < bounds.length && s > bounds[i]) i++;
  counts[i]++;
  due = now + ${SAMPLE_EVERY_MS};
}, ${SAMPLE_EVERY_MS});
function stallText() {
  let cumulative = 0;
  const out = [];
  for (let i = 0; i <= bounds.length; i++) {
    cumulative += counts[i];
    out.push('strikebook_event_loop_delay_seconds_bucket{le="' + (i < bounds.length ? String(bounds[i]) : '+Inf') + '"} ' + cumulative);
  }
  return out.join('\\n') + '\\n';
}
`;
}

let clockTicks: number | null = null;

/**
 * CPU time (user + system, all threads; one thread's with its /proc/<pid>/task/<tid>/stat as
 * `statFile`) a process has used so far, in seconds; null where /proc is
 * not available. The benchmarks report it per request: on a small machine where the load generator
 * shares the cores with the server, CPU per request says more than requests per second alone.
 */
export function processCpuSeconds(pid: number | undefined, statFile = `/proc/${pid}/stat`): number | null {
  if (pid === undefined) return null;
  try {
    clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    const stat = readFileSync(statFile, 'utf8');
    // fields after the parenthesized command name; utime and stime are the 12th and 13th of them
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return null;
  }
}

/** CPU microseconds per request between two processCpuSeconds readings, as text ('n/a' without /proc). */
export function cpuPerRequest(before: number | null, after: number | null, requests: number): string {
  return before === null || after === null || requests === 0 ? 'n/a' : `${(((after - before) * 1e6) / requests).toFixed(1)} us`;
}

/**
 * Runs a bench section when its own file is the program (`node --import tsx bench/x.ts`), printing
 * its report; `npm run bench` imports the same module and runs every section (bench/run.ts).
 */
export function runIfMain(moduleUrl: string, run: () => Promise<{ lines: string[]; ok: boolean }>): void {
  if (process.argv[1] === undefined || moduleUrl !== pathToFileURL(process.argv[1]).href) return;
  run().then(
    (r) => {
      for (const l of r.lines) console.log(l);
      process.exitCode = r.ok ? 0 : 1;
    },
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}

/**
 * A section's measured seconds: BENCH_SECONDS when set (to check a section works with a short run,
 * e.g. `BENCH_SECONDS=4 npm run bench -- crossing`; its figures are then not the judged ones), else `def`.
 */
export function benchSeconds(def: number): number {
  const s = Number(process.env.BENCH_SECONDS);
  return s > 0 ? s : def;
}

/** The client processes of the WebSocket fan-out benches (bench/wsBenchClient.ts) and their messages. */
export interface BenchClients {
  clients: ChildProcess[];
  /**
   * Resolves, per client, with the first message `pick` maps to a value (in client order); rejects
   * if a client goes away before sending it.
   */
  from<T>(pick: (m: any) => T | undefined): Promise<T[]>;
  /** The same message to every client. */
  broadcast(msg: object): void;
  /** Ends every client still running (SIGKILL); for a `finally`. */
  kill(): void;
}

/**
 * Forks `count` bench clients (bench/wsBenchClient.ts; BENCH_CLIENT_ARGS: node flags for them,
 * e.g. "--cpu-prof --cpu-prof-dir=prof"). A client that went away is told by its `close` event, not
 * `exit`: the parent may see a child's exit before it has read the messages the child wrote just
 * before it (a 0.6 MB result under a busy parent loop), and the full-size raw fan-out section failed
 * so ("bench client exited (0)") while the client had sent its result (issue 36). `close` comes
 * only once the IPC channel is drained, so every message sent is read first.
 */
export function forkBenchClients(count: number): BenchClients {
  const execArgv = [...(process.env.BENCH_CLIENT_ARGS?.split(/\s+/).filter(Boolean) ?? []), '--import', 'tsx'];
  const clientFile = path.join(ROOT, 'bench', 'wsBenchClient.ts');
  const clients = Array.from({ length: count }, () => fork(clientFile, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const from = <T>(pick: (m: any) => T | undefined): Promise<T[]> =>
    Promise.all(
      clients.map(
        (client) =>
          new Promise<T>((resolve, reject) => {
            const on = (m: any) => {
              const v = pick(m);
              if (v === undefined) return;
              client.off('message', on);
              client.off('close', gone);
              resolve(v);
            };
            const gone = (code: number | null, signal: NodeJS.Signals | null) => {
              client.off('message', on);
              reject(new Error(`bench client exited (${signal ?? code}) before answering`));
            };
            client.on('message', on);
            client.once('close', gone);
          }),
      ),
    );
  return {
    clients,
    from,
    broadcast(msg) {
      for (const c of clients) c.send(msg);
    },
    kill() {
      for (const c of clients) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    },
  };
}
