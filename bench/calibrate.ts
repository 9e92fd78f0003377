// What p99 latency this machine and its load generator allow at all, for section (b) of the HTTP
// benchmark (p99 <= 10 ms with 100 connections): the bare node:http reference server, made to
// spend 0, 5, 10, 20 and 40 us of CPU per request before it answers, measured exactly as section
// (b) measures it (autocannon, 100 connections, one request each, a body of the same shape). If a
// server doing 10 us of work per request already misses the target here, no real server meets it
// on this machine: the generator shares its cores. Not part of `npm run bench` (about a minute):
//
//   node --import tsx bench/calibrate.ts [micros,micros,...]
import { pathToFileURL } from 'node:url';
import { CONNECTIONS, TARGET_P99_MS, runLoad } from './httpBench.ts';
import { cpuPerRequest, processCpuSeconds, spawnBareServer, waitHttp } from './support.ts';

const DEFAULT_SPINS = [0, 5, 10, 20, 40];

export async function calibrate(spins: number[], seconds = 8): Promise<string[]> {
  const lines: string[] = [];
  // requests shaped like the benchmark's orders: a bearer token and a limit-order body
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${'x'.repeat(43)}` };
  const plans = Array.from({ length: CONNECTIONS }, (_, c) =>
    Array.from({ length: 40 }, (_, k) => ({
      path: '/',
      headers,
      body: JSON.stringify({ instrument_name: 'BTC-25DEC26-100000-C', amount: 0.1, price: 0.005 + (k % 20) * 0.0005, type: 'limit', label: `c${c}` }),
    })),
  );
  for (const spin of spins) {
    const port = 21000 + Math.floor(Math.random() * 10000);
    const server = spawnBareServer(port, JSON.stringify({ jsonrpc: '2.0', result: 'hello' }), spin);
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitHttp(`${url}/`);
      await runLoad({ url, plans, seconds: 2 });
      const cpu0 = processCpuSeconds(server.pid);
      const r = await runLoad({ url, plans, seconds });
      const cpu = cpuPerRequest(cpu0, processCpuSeconds(server.pid), r.total);
      lines.push(
        `node:http + ${String(spin).padStart(2)} us of CPU per request: ${Math.round(r.rps).toString().padStart(6)} req/s  ` +
          `p50 ${r.p50} ms  p99 ${r.p99} ms (target <= ${TARGET_P99_MS})  server CPU ${cpu} per request`,
      );
    } finally {
      server.kill('SIGKILL');
    }
  }
  return lines;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const spins = process.argv[2] ? process.argv[2].split(',').map(Number) : DEFAULT_SPINS;
  calibrate(spins).then(
    (lines) => {
      for (const line of lines) console.log(line);
    },
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
