// Requests from a chosen loopback source address (127.0.0.x), so one test can play several clients
// on different hosts: over HTTP (POST with a JSON body) and over a WebSocket.
import { request as httpRequest } from 'node:http';
import WebSocket from 'ws';

export interface FromReply {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

/** POSTs `params` to `/api/v2/<method>` of `base` from the source address `from`. */
export function postFrom(base: string, from: string, method: string, params: Record<string, unknown>, headers: Record<string, string> = {}): Promise<FromReply> {
  const { port } = new URL(base);
  const body = JSON.stringify(params);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: '127.0.0.1', port: Number(port), localAddress: from, method: 'POST', path: `/api/v2/${method}`, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers }, agent: false },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text), headers: res.headers }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** public/auth by password over HTTP from `from`. */
export function loginFrom(base: string, from: string, username: string, password: string, headers: Record<string, string> = {}): Promise<FromReply> {
  return postFrom(base, from, 'public/auth', { grant_type: 'password', username, password }, headers);
}

/** A WebSocket to `base` from `from`; rejects when the upgrade is refused. */
export function wsFrom(base: string, from: string, headers: Record<string, string> = {}): Promise<WebSocket> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws/api/v2`, { localAddress: from, headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
  });
}

let nextId = 1;

/** One JSON-RPC call on an open WebSocket; resolves with the whole envelope. */
export function wsCall(ws: WebSocket, method: string, params: Record<string, unknown>): Promise<any> {
  const id = nextId++;
  return new Promise((resolve) => {
    const onMessage = (raw: WebSocket.RawData) => {
      const msg = JSON.parse(raw.toString());
      if (msg.id !== id) return;
      ws.off('message', onMessage);
      resolve(msg);
    };
    ws.on('message', onMessage);
    ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
  });
}
