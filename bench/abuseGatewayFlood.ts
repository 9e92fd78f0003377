// The hostile client of the gateway flood (bench/abuseGateway.ts), a child process so that its CPU
// does not share the victim's event loop:
//   node --import tsx bench/abuseGatewayFlood.ts <gateway url> <email> <password> <instrument>
// 256 WebSocket connections to the gateway from one address (127.0.0.1). Each logs in (the login is
// what needs an upstream connection of its own: the gateway grants a few per address and refuses the
// rest at once), then keeps one request in flight for good: its open orders when logged in, a book
// otherwise. A connection that closes is opened again. Runs until killed; prints nothing.
import WebSocket from 'ws';

const [gateway, email, password, instrument] = process.argv.slice(2);
const url = `${gateway!.replace(/^http/, 'ws')}/ws/api/v2`;
const CONNECTIONS = 256;

function connection(): void {
  const ws = new WebSocket(url, { localAddress: '127.0.0.1' });
  let id = 0;
  let authed = false;
  const next = () => {
    const req = authed ? { method: 'private/get_open_orders_by_currency', params: { currency: 'BTC' } } : { method: 'public/get_order_book', params: { instrument_name: instrument, depth: 10 } };
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: ++id, ...req }));
  };
  ws.on('open', () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'public/auth', params: { grant_type: 'password', username: email, password } })));
  ws.on('message', (raw) => {
    const msg = JSON.parse(raw.toString()) as { id?: number; result?: { access_token?: string } };
    if (msg.id === 1 && typeof msg.result?.access_token === 'string') authed = true;
    if (typeof msg.id === 'number' && ws.readyState === WebSocket.OPEN) next();
  });
  ws.on('error', () => undefined);
  ws.on('close', () => setTimeout(connection, 200));
}

for (let c = 0; c < CONNECTIONS; c++) connection();
