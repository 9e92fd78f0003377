// Who the client is when the TCP peer is a proxy (issue 29). Behind nginx, HAProxy, Caddy or a
// Strikebook gateway every request reaches us from the proxy's address, so every per-address limit
// (login back-off, anonymous credits, connection caps, invite checks) would be shared by all its
// clients: one of them could lock the others out. A proxy names the client in a header, but anyone
// can send that header, so it is read only when the peer is a proxy the operator listed
// (STRIKEBOOK_TRUSTED_PROXIES), and only the configured header (STRIKEBOOK_PROXY_HEADER): a proxy
// that appends to X-Forwarded-For passes a client's own `Forwarded` on untouched, and vice versa.
//
// The client is the right-most hop that is not itself a trusted proxy: each trusted proxy appends
// the address it saw, so everything left of the first untrusted hop (from the right) was written by
// someone we do not trust. Pure: no I/O, no clock.

/** One CIDR block: its prefix length and masked address (IPv6 as a bigint, IPv4 as a number). */
export interface Cidr {
  v6: boolean;
  prefix: number;
  base: bigint;
  base4: number;
  mask4: number;
}

/** Which header a trusted proxy names the client in. */
export type ProxyHeader = 'x-forwarded-for' | 'forwarded';

export interface ProxyTrust {
  proxies: readonly Cidr[];
  header: ProxyHeader;
}

export const NO_PROXIES: ProxyTrust = { proxies: [], header: 'x-forwarded-for' };

/** Hops read from the right before giving up: a chain longer than this is not a real deployment. */
export const MAX_HOPS = 32;

/** An address parsed: IPv4 as a number (every request reads one: no bigint work), IPv6 as a bigint. */
type Parsed = { v6: false; n: number } | { v6: true; value: bigint };

function parseV4(s: string): number | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let v = 0;
  for (const p of parts) {
    // no leading zeros: `010` is octal to some parsers and decimal to others
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    v = v * 256 + n;
  }
  return v;
}

function parseV6(s: string): bigint | null {
  if (s.length > 45 || !/^[0-9a-fA-F:.]+$/.test(s)) return null;
  let tail4: number | null = null;
  let text = s;
  // an IPv4 tail (`::ffff:1.2.3.4`) is the last 32 bits
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.', lastColon)) {
    tail4 = parseV4(s.slice(lastColon + 1));
    if (tail4 === null) return null;
    text = `${s.slice(0, lastColon + 1)}0:0`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const group = (h: string): string[] | null => (h === '' ? [] : h.split(':'));
  const left = group(halves[0]!);
  const right = halves.length === 2 ? group(halves[1]!) : [];
  if (left === null || right === null) return null;
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const groups = [...left, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...right];
  let v = 0n;
  for (const g of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
    v = (v << 16n) | BigInt(parseInt(g, 16));
  }
  if (tail4 !== null) v = (v & ~0xffffffffn) | BigInt(tail4);
  return v;
}

/** An address as text, IPv4-mapped IPv6 taken as the IPv4 it carries; null when it is not one. */
function parseAddress(raw: string): Parsed | null {
  const v4 = parseV4(raw);
  if (v4 !== null) return { v6: false, n: v4 };
  const v6 = parseV6(raw);
  if (v6 === null) return null;
  if (v6 >> 32n === 0xffffn) return { v6: false, n: Number(v6 & 0xffffffffn) };
  return { v6: true, value: v6 };
}

function formatV4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}

/** RFC 5952 text: lower case, no leading zeros, the longest run (2+) of zero groups as `::`. */
function formatV6(v: bigint): string {
  const g: number[] = [];
  for (let i = 7; i >= 0; i--) g.push(Number((v >> BigInt(i * 16)) & 0xffffn));
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (bestAt < 0) return hex.join(':');
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLen).join(':')}`;
}

function format(p: Parsed): string {
  return p.v6 ? formatV6(p.value) : formatV4(p.n);
}

/**
 * The canonical text of an address (so `::ffff:10.0.0.1` and `10.0.0.1`, `::1` and `0:0::1` are
 * one client), or the text as given when it is not an IP address (a Unix socket peer, say).
 */
export function canonicalAddress(raw: string): string {
  const p = parseAddress(raw);
  return p === null ? raw : format(p);
}

/**
 * Parses STRIKEBOOK_TRUSTED_PROXIES: comma-separated addresses or CIDR blocks, IPv4 or IPv6
 * (`127.0.0.1, 10.0.0.0/8, fd00::/8`). Throws an Error naming the bad entry.
 */
export function parseCidrList(raw: string): Cidr[] {
  const out: Cidr[] = [];
  for (const entry of raw.split(',')) {
    const e = entry.trim();
    if (e === '') continue;
    const slash = e.indexOf('/');
    const addr = parseAddress(slash < 0 ? e : e.slice(0, slash));
    const prefixText = slash < 0 ? null : e.slice(slash + 1);
    if (addr === null || (prefixText !== null && !/^\d{1,3}$/.test(prefixText))) throw new Error(`"${e}" is not an IP address or CIDR block`);
    // a mapped address with a prefix counts its prefix over 128 bits: `::ffff:10.0.0.0/104` is 10/8
    const mapped = slash >= 0 && !addr.v6 && parseV4(e.slice(0, slash)) === null;
    const width = addr.v6 ? 128 : 32;
    let prefix = prefixText === null ? width : Number(prefixText);
    if (mapped) prefix -= 96;
    if (prefix < 0 || prefix > width) throw new Error(`"${e}" has a prefix length outside 0..${width}`);
    const mask4 = prefix === 0 || addr.v6 ? 0 : (~0 << (32 - prefix)) >>> 0;
    out.push(addr.v6 ? { v6: true, prefix, base: mask(addr.value, prefix, 128), base4: 0, mask4 } : { v6: false, prefix, base: 0n, base4: (addr.n & mask4) >>> 0, mask4 });
  }
  return out;
}

function mask(v: bigint, prefix: number, width: number): bigint {
  const host = BigInt(width - prefix);
  return (v >> host) << host;
}

function inList(p: Parsed, list: readonly Cidr[]): boolean {
  for (const c of list) {
    if (c.v6 !== p.v6) continue;
    if (p.v6 ? mask(p.value, c.prefix, 128) === c.base : ((p.n & c.mask4) >>> 0) === c.base4) return true;
  }
  return false;
}

/** Whether `address` (as a socket reports it) is in `list`. */
export function isTrustedProxy(address: string | undefined, list: readonly Cidr[]): boolean {
  if (address === undefined || list.length === 0) return false;
  const p = parseAddress(address);
  return p !== null && inList(p, list);
}

/** One hop's node as a proxy wrote it, without its port: `1.2.3.4:80`, `[::1]:80`, `"[::1]"`. */
function stripPort(node: string): string {
  let n = node.trim();
  if (n.startsWith('"') && n.endsWith('"') && n.length >= 2) n = n.slice(1, -1);
  if (n.startsWith('[')) {
    const end = n.indexOf(']');
    return end < 0 ? n : n.slice(1, end);
  }
  // one colon: IPv4 with a port; more: a bare IPv6 address
  const colon = n.indexOf(':');
  return colon >= 0 && colon === n.lastIndexOf(':') ? n.slice(0, colon) : n;
}

/** The hops a header lists, left (first client) to right (last proxy). */
export function forwardedHops(value: string, header: ProxyHeader): string[] {
  if (header === 'x-forwarded-for') return value.split(',').map(stripPort);
  // plain commas, not quote-aware: a client's own unbalanced quote would otherwise swallow the
  // elements the trusted proxies append after it, and no `for` value a proxy writes holds a comma
  return value.split(',').map((element) => {
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq > 0 && pair.slice(0, eq).trim().toLowerCase() === 'for') return stripPort(pair.slice(eq + 1));
    }
    // an element without `for` names no client: not an address, so the walk stops there
    return '';
  });
}

/**
 * The client's address: the peer itself unless the peer is a trusted proxy; then the right-most
 * hop of the configured header that is not a trusted proxy. A hop that is not an IP address
 * (`unknown`, an obfuscated name, garbage) stops the walk at the trusted hop to its right: its
 * clients share that proxy's address rather than take a name anyone could pick. When every hop is
 * trusted, the left-most. Canonical text (canonicalAddress); with no proxies configured, the peer
 * as the socket wrote it (which is), IPv4-mapped addresses unwrapped, without parsing: the cost of
 * every request when no proxy is in front (about 60 ns against 1 us parsed).
 */
export function clientAddress(peer: string | undefined, headerValue: string | string[] | undefined, trust: ProxyTrust): string {
  const peerText = peer ?? '';
  // no proxies (the default): the peer as the socket wrote it (already canonical), IPv4-mapped unwrapped
  if (trust.proxies.length === 0) return peerText.startsWith('::ffff:') && peerText.includes('.') ? peerText.slice(7) : peerText;
  const peerParsed = parseAddress(peerText);
  if (peerParsed === null) return peerText;
  if (!inList(peerParsed, trust.proxies) || headerValue === undefined) return format(peerParsed);
  const value = Array.isArray(headerValue) ? headerValue.join(',') : headerValue;
  // only the right end is read: a client can send a long header, but not make us walk it
  const tail = value.length > 4096 ? value.slice(value.indexOf(',', value.length - 4096) + 1) : value;
  const hops = forwardedHops(tail, trust.header);
  let current = peerParsed;
  for (let i = hops.length - 1, seen = 0; i >= 0 && seen < MAX_HOPS; i--, seen++) {
    const hop = parseAddress(hops[i]!);
    if (hop === null) return format(current);
    current = hop;
    if (!inList(hop, trust.proxies)) return format(hop);
  }
  return format(current);
}

/** The headers a request carries that say it came through a proxy. */
export const FORWARDING_HEADERS = ['forwarded', 'x-forwarded-for', 'x-real-ip', 'x-forwarded-host', 'x-forwarded-proto', 'via'] as const;

/** Whether a request came through a proxy, by its headers or because its peer is a trusted proxy. */
export function viaProxy(peer: string | undefined, headers: Record<string, string | string[] | undefined>, proxies: readonly Cidr[]): boolean {
  return isTrustedProxy(peer, proxies) || FORWARDING_HEADERS.some((h) => headers[h] !== undefined);
}

/** The client address of a node:http request (HTTP or a WebSocket upgrade). */
export function clientAddressOf(req: { socket: { remoteAddress?: string }; headers: Record<string, string | string[] | undefined> }, trust: ProxyTrust): string {
  return clientAddress(req.socket.remoteAddress, req.headers[trust.header], trust);
}
