// The hostile clients of the abuse benchmark (bench/abuseBench.ts), run as a child process so that
// their own CPU does not share the victim's event loop:
//   node --import tsx bench/abuseFlood.ts <base url> <mode> <token> <instrument> <bid price>
// modes: `reads` 16 unauthenticated connections asking for every instrument, every book and deep
// books; `ws` one WebSocket at a time sending 700 heavy requests and disconnecting, over and over;
// `orders` 256 connections placing IOC orders as another user. Runs until killed; prints nothing.
import { Agent, request } from 'node:http';
import WebSocket from 'ws';

const [base, mode, token, instrument, price] = process.argv.slice(2);
const { hostname, port } = new URL(base);

function post(agent: Agent, path: string, body: string, auth?: string): Promise<void> {
  return new Promise((resolve) => {
    const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (auth) headers.authorization = `Bearer ${auth}`;
    const req = request({ host: hostname, port: Number(port), method: 'POST', path, headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve());
      res.on('error', () => resolve());
    });
    req.on('error', () => setTimeout(resolve, 50));
    req.end(body);
  });
}

async function loop(agent: Agent, next: (i: number) => [string, string], auth?: string): Promise<never> {
  for (let i = 0; ; i++) {
    const [path, body] = next(i);
    await post(agent, path, body, auth);
  }
}

if (mode === 'reads') {
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const heavy: Array<[string, string]> = [
    ['/api/v2/public/get_instruments', JSON.stringify({ currency: 'any' })],
    ['/api/v2/public/get_all_order_books', JSON.stringify({ currency: 'any', depth: 1000 })],
    ['/api/v2/public/get_book_summary_by_currency', JSON.stringify({ currency: 'BTC' })],
  ];
  for (let c = 0; c < 16; c++) {
    // every connection also asks for deep books with a depth of its own: distinct cache keys
    void loop(agent, (i) => (i % 4 === 3 ? ['/api/v2/public/get_order_book', JSON.stringify({ instrument_name: instrument, depth: 1000 + ((c * 7919 + i) % 9000) })] : heavy[(c + i) % 3]));
  }
} else if (mode === 'ws') {
  const url = base.replace(/^http/, 'ws') + '/ws/api/v2';
  const burst = (): void => {
    const ws = new WebSocket(url);
    ws.on('error', () => undefined);
    ws.on('open', () => {
      for (let i = 0; i < 700; i++) {
        const method = i % 2 === 0 ? 'public/get_instruments' : 'public/get_all_order_books';
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: i, method, params: i % 2 === 0 ? { currency: 'any' } : { currency: 'any', depth: 1000 } }));
      }
      ws.close();
    });
    ws.on('close', () => setTimeout(burst, 200));
  };
  burst();
} else if (mode === 'orders') {
  const agent = new Agent({ keepAlive: true, maxSockets: 256 });
  const body = JSON.stringify({ instrument_name: instrument, amount: 0.1, price: Number(price), time_in_force: 'immediate_or_cancel' });
  for (let c = 0; c < 256; c++) void loop(agent, () => ['/api/v2/private/buy', body], token);
} else {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}
