// The reference of the raw fan-out line (bench/fanoutRawBench.ts): a bare `ws` server, run as a
// child process, that writes the frames Strikebook sent in its run to the same clients. It answers
// each client's subscribe, then, given a schedule of rounds (when, and the notifications' payloads),
// writes each round as Strikebook's hub does: the round's frames built and joined once, the same
// Buffer written to every connection's socket. Nothing is computed per round but the write, so its
// delays are the floor for that traffic on this machine: the socket writes, the kernel, the clients
// reading. It reports when it began each round; the delays count from there (Strikebook's from the
// commit of the batch the round shows, after which it renders and writes).
import type { Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { textFrame } from '../src/api/ws/frames.ts';

interface Schedule {
  /** per round: wall-clock ms when it is due, and the payloads (JSON text) in the order sent */
  rounds: Array<[at: number, payloads: string[]]>;
}

const wall = () => performance.timeOrigin + performance.now();
const sockets: Socket[] = [];

const server = new WebSocketServer({ port: 0, host: '127.0.0.1', perMessageDeflate: false });
server.on('connection', (ws: WebSocket) => {
  // the socket under the `ws` object: frames are written to it directly, as Strikebook's hub does
  sockets.push((ws as unknown as { _socket: Socket })._socket);
  ws.on('message', (data) => {
    const req = JSON.parse(String(data)) as { id?: number; params?: { channels?: string[] } };
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: req.id ?? null, result: req.params?.channels ?? [] }));
  });
});
server.on('listening', () => {
  const addr = server.address();
  process.send!({ port: typeof addr === 'object' && addr !== null ? addr.port : 0 });
});

process.on('message', (m: Schedule) => {
  // every round's bytes built before the first is due: the writes are what is measured
  const rounds = m.rounds.map(([at, payloads]) => ({ at, bytes: Buffer.concat(payloads.map((p) => textFrame(Buffer.from(p)))) }));
  const starts: number[] = [];
  let i = 0;
  const cpu0 = process.cpuUsage();
  const next = () => {
    while (i < rounds.length && rounds[i]!.at <= wall()) {
      starts.push(wall());
      const bytes = rounds[i]!.bytes;
      for (const s of sockets) s.write(bytes);
      i++;
    }
    if (i < rounds.length) setTimeout(next, Math.max(0, rounds[i]!.at - wall()));
    else {
      const cpu = process.cpuUsage(cpu0);
      process.send!({ starts, cpuSeconds: (cpu.user + cpu.system) / 1e6 });
    }
  };
  next();
});
