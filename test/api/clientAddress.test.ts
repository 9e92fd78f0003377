// The client's address through trusted proxies (src/api/http/clientAddress.ts): examples from the
// three proxies the docs configure, then properties over random chains. The property that matters:
// whatever a client writes into the header itself, the address it gets is the one the first trusted
// proxy saw.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { canonicalAddress, clientAddress, isTrustedProxy, parseCidrList, viaProxy, type ProxyTrust } from '../../src/api/http/clientAddress.ts';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/app/config.ts';
import { ROOT, tempDir } from '../helpers/server.ts';

const trust = (list: string, header: ProxyTrust['header'] = 'x-forwarded-for'): ProxyTrust => ({ proxies: parseCidrList(list), header });

describe('clientAddress: examples', () => {
  it('takes the peer when no proxy is trusted, whatever the headers say', () => {
    assert.equal(clientAddress('203.0.113.9', '1.2.3.4', trust('')), '203.0.113.9');
    assert.equal(clientAddress('::ffff:203.0.113.9', '1.2.3.4', trust('')), '203.0.113.9');
  });

  it('takes the peer when the peer is not a trusted proxy', () => {
    assert.equal(clientAddress('198.51.100.1', '1.2.3.4', trust('127.0.0.1, 10.0.0.0/8')), '198.51.100.1');
  });

  it('takes the right-most hop that is not a trusted proxy from a trusted peer', () => {
    const t = trust('127.0.0.1, 10.0.0.0/8');
    assert.equal(clientAddress('127.0.0.1', '203.0.113.7', t), '203.0.113.7');
    // the client forged the first entry; the trusted proxies appended the real one and each other
    assert.equal(clientAddress('127.0.0.1', '6.6.6.6, 203.0.113.7, 10.1.2.3', t), '203.0.113.7');
    assert.equal(clientAddress('::ffff:127.0.0.1', ['6.6.6.6', '203.0.113.7'], t), '203.0.113.7');
    // ports and brackets as HAProxy and Caddy may write them
    assert.equal(clientAddress('127.0.0.1', '203.0.113.7:51234', t), '203.0.113.7');
    assert.equal(clientAddress('127.0.0.1', '[2001:DB8::0:7]:443', t), '2001:db8::7');
    // no header at all: the proxy itself
    assert.equal(clientAddress('127.0.0.1', undefined, t), '127.0.0.1');
    // every hop trusted: the left-most
    assert.equal(clientAddress('127.0.0.1', '10.0.0.5, 10.0.0.6', t), '10.0.0.5');
  });

  it('stops at a hop that is not an address, giving the trusted hop to its right', () => {
    const t = trust('127.0.0.1, 10.0.0.0/8');
    assert.equal(clientAddress('127.0.0.1', 'unknown, 10.0.0.9', t), '10.0.0.9');
    assert.equal(clientAddress('127.0.0.1', 'not-an-ip', t), '127.0.0.1');
    assert.equal(clientAddress('127.0.0.1', '', t), '127.0.0.1');
  });

  it('reads RFC 7239 Forwarded only when configured to, quoted IPv6 and all', () => {
    const t = trust('127.0.0.1', 'forwarded');
    assert.equal(clientAddress('127.0.0.1', 'for=192.0.2.60;proto=http;by=203.0.113.43', t), '192.0.2.60');
    assert.equal(clientAddress('127.0.0.1', 'for=6.6.6.6, for="[2001:db8:cafe::17]:4711";proto=https', t), '2001:db8:cafe::17');
    assert.equal(clientAddress('127.0.0.1', 'for=_hidden, for=127.0.0.1', t), '127.0.0.1');
    assert.equal(clientAddress('127.0.0.1', 'proto=https', t), '127.0.0.1');
  });

  it('canonicalizes addresses so one client is one key', () => {
    assert.equal(canonicalAddress('::ffff:10.0.0.1'), '10.0.0.1');
    assert.equal(canonicalAddress('0:0:0:0:0:0:0:1'), '::1');
    assert.equal(canonicalAddress('2001:0DB8:0:0:1:0:0:1'), '2001:db8::1:0:0:1');
    assert.equal(canonicalAddress('not an address'), 'not an address');
  });

  it('parses CIDR lists of both families and refuses anything else', () => {
    const l = parseCidrList(' 10.0.0.0/8 ,::1, fd00::/8,192.168.1.7,::ffff:172.16.0.0/108');
    for (const a of ['10.255.0.1', '::ffff:10.0.0.1', '::1', 'fd12::1', '192.168.1.7', '172.16.9.9']) assert.equal(isTrustedProxy(a, l), true, a);
    for (const a of ['11.0.0.1', '::2', 'fe80::1', '192.168.1.8', '172.32.0.1', undefined, 'x']) assert.equal(isTrustedProxy(a, l), false, String(a));
    for (const bad of ['10.0.0.0/33', '10.0.0', '256.0.0.1', '::1/129', 'localhost', '10.0.0.0/', '010.0.0.1', '1:2:3:4:5:6:7:8:9', '::1::2']) {
      assert.throws(() => parseCidrList(bad), /not an IP address|prefix length/, bad);
    }
    assert.deepEqual(parseCidrList(''), []);
  });

  it('says a request came through a proxy by its peer or its forwarding headers', () => {
    const l = parseCidrList('10.0.0.1');
    assert.equal(viaProxy('127.0.0.1', {}, l), false);
    assert.equal(viaProxy('10.0.0.1', {}, l), true);
    for (const h of ['x-forwarded-for', 'forwarded', 'x-real-ip', 'via']) assert.equal(viaProxy('127.0.0.1', { [h]: 'x' }, l), true, h);
  });
});

describe('STRIKEBOOK_TRUSTED_PROXIES and STRIKEBOOK_PROXY_HEADER', () => {
  it('are empty and X-Forwarded-For by default; a bad value is a ConfigError naming the variable', () => {
    assert.deepEqual(loadConfig({}).proxyTrust, { proxies: [], header: 'x-forwarded-for' });
    assert.equal(loadConfig({ STRIKEBOOK_TRUSTED_PROXIES: '127.0.0.1,::1', STRIKEBOOK_PROXY_HEADER: 'forwarded' }).proxyTrust!.proxies.length, 2);
    assert.throws(() => loadConfig({ STRIKEBOOK_TRUSTED_PROXIES: '127.0.0.1,nope' }), (e: Error) => e instanceof ConfigError && /^STRIKEBOOK_TRUSTED_PROXIES .*"nope"/.test(e.message));
    assert.throws(() => loadConfig({ STRIKEBOOK_PROXY_HEADER: 'x-real-ip' }), (e: Error) => e instanceof ConfigError && /STRIKEBOOK_PROXY_HEADER/.test(e.message));
  });

  it('a bad STRIKEBOOK_TRUSTED_PROXIES stops the server at start: exit 2 and one line naming it', (t) => {
    const dir = tempDir();
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const r = spawnSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'src/app/main.ts')], {
      cwd: ROOT,
      env: { ...process.env, PORT: '0', STRIKEBOOK_DATA_DIR: dir, DATABASE_URL: '', STRIKEBOOK_TRUSTED_PROXIES: '10.0.0.0/8,10.0.0.0/99' },
      encoding: 'utf8',
      timeout: 90_000,
    });
    assert.equal(r.status, 2, r.stderr);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0]!, /^configuration error: STRIKEBOOK_TRUSTED_PROXIES .*"10\.0\.0\.0\/99"/);
  });
});

// random addresses of both families, written in the forms proxies and sockets use
const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'));
const v6 = fc.array(fc.nat(0xffff), { minLength: 8, maxLength: 8 }).map((g) => g.map((x) => x.toString(16)).join(':'));
const addr = fc.oneof(v4, v6);
/** Header text a client may write itself: any printable characters, commas and quotes included. */
const forged = fc.string({ unit: fc.constantFrom(...'0123456789abcdef.:,;="[] for'.split('')), maxLength: 80 });

describe('clientAddress: properties', () => {
  const proxies = ['10.0.0.0/8', 'fd00::/8', '127.0.0.1'];
  const trusted = fc.oneof(fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255)).map(([a, b, c]) => `10.${a}.${b}.${c}`), fc.nat(0xffff).map((x) => `fd00::${x.toString(16)}`), fc.constant('127.0.0.1'));
  const untrusted = addr.filter((a) => !isTrustedProxy(a, parseCidrList(proxies.join(','))));

  it('gives the address the first trusted proxy saw, whatever the client forged before it', () => {
    for (const header of ['x-forwarded-for', 'forwarded'] as const) {
      const t = trust(proxies.join(','), header);
      fc.assert(
        fc.property(forged, untrusted, fc.array(trusted, { maxLength: 5 }), trusted, (prefix, client, chain, peer) => {
          // each trusted proxy appends the hop it saw: the client, then the proxies before it
          const hops = [client, ...chain];
          const written = header === 'x-forwarded-for' ? hops.join(', ') : hops.map((h) => (h.includes(':') ? `for="[${h}]"` : `for=${h}`)).join(', ');
          const value = prefix === '' ? written : `${prefix}, ${written}`;
          assert.equal(clientAddress(peer, value, t), canonicalAddress(client));
        }),
      );
    }
  });

  it('never reads the header of a peer that is not trusted', () => {
    const t = trust(proxies.join(','));
    fc.assert(fc.property(untrusted, forged, (peer, value) => assert.equal(clientAddress(peer, value, t), canonicalAddress(peer))));
  });

  it('walks from the right like a reference: trusted hops skipped, the first untrusted hop answers', () => {
    const t = trust(proxies.join(','));
    fc.assert(
      fc.property(fc.array(fc.oneof(untrusted, trusted), { maxLength: 40 }), trusted, (hops, peer) => {
        let expected = peer;
        for (let i = hops.length - 1, n = 0; i >= 0 && n < 32; i--, n++) {
          expected = hops[i]!;
          if (!isTrustedProxy(expected, t.proxies)) break;
        }
        assert.equal(clientAddress(peer, hops.join(', '), t), canonicalAddress(expected));
      }),
    );
  });

  it('canonical text is stable and the same for the mapped and plain IPv4 forms', () => {
    fc.assert(
      fc.property(addr, (a) => {
        const c = canonicalAddress(a);
        assert.equal(canonicalAddress(c), c);
        assert.equal(canonicalAddress(c.toUpperCase()), c);
      }),
    );
    fc.assert(fc.property(v4, (a) => assert.equal(canonicalAddress(`::ffff:${a}`), canonicalAddress(a))));
  });

  it('a CIDR block holds exactly the addresses whose first prefix bits match', () => {
    const bits = (a: string): string => {
      const c = canonicalAddress(a);
      if (!c.includes(':')) return c.split('.').map((x) => Number(x).toString(2).padStart(8, '0')).join('');
      // expand :: to its groups, then each group to 16 bits
      const [l, r] = c.includes('::') ? c.split('::') : [c, undefined];
      const left = l ? l.split(':') : [];
      const right = r === undefined ? [] : r ? r.split(':') : [];
      const groups = [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
      return groups.map((g) => parseInt(g, 16).toString(2).padStart(16, '0')).join('');
    };
    fc.assert(
      fc.property(addr, addr, fc.nat(128), (rawNet, probe, p) => {
        const net = canonicalAddress(rawNet);
        const width = net.includes(':') ? 128 : 32;
        const prefix = p % (width + 1);
        const list = parseCidrList(`${net}/${prefix}`);
        const sameFamily = net.includes(':') === canonicalAddress(probe).includes(':');
        const expected = sameFamily && bits(net).slice(0, prefix) === bits(probe).slice(0, prefix);
        assert.equal(isTrustedProxy(probe, list), expected, `${probe} in ${net}/${prefix}`);
      }),
    );
  });
});
