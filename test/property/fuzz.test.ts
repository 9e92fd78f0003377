// Input fuzzer generated from the method registry: every operation of the authentication, invite
// and trading groups gets random params (its schema's keys with valid, boundary and junk values,
// plus junk keys) by GET, POST and JSON-RPC POST, with and without credentials. Whatever arrives,
// the answer is a well-formed envelope with an API.md error code, never an HTTP 5xx.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { allMethods, methodGroups } from '../../src/api/methods/index.ts';
import type { MethodDef } from '../../src/api/rpc/registry.ts';
import { validRpcId } from '../../src/api/rpc/validate.ts';
import { sha256Hex } from '../../src/auth/crypto.ts';
import { assertEnvelope } from '../helpers/envelope.ts';
import { atmCall, cheapCall, type Market } from '../helpers/market.ts';
import { BOOTSTRAP, adminToken, ok, rawRequest, request, rpc, startServer, userToken, type TestServer } from '../helpers/server.ts';

const GROUPS = ['authentication', 'invites', 'trading'] as const;
const PREFIXES = ['/v1/', '/api/v2/', '/api/v1/'];
const RUNS_PER_METHOD = 40;
/** Order entry has the most rules to trip over: it gets more runs. */
const RUNS: Record<string, number> = { 'private/buy': 120, 'private/sell': 120 };
const PW = 'user-password-1';

type Role = 'none' | 'user' | 'other' | 'admin' | 'bogus';
const CREDENTIALS = {
  user: { username: 'user@example.com', password: PW },
  other: { username: 'other@example.com', password: PW },
  admin: { username: 'admin@example.com', password: 'admin-password-1' },
};
interface Session {
  access: string;
  refresh: string;
}

/** Numbers a parser can trip over. */
const nastyNumber = fc.constantFrom(0, -0, -1, 1e308, -1e308, 5e-324, 2 ** 53, 2 ** 53 + 2, -(2 ** 63), 1e21, 0.1 + 0.2, 123456789.12345679, 8.64e15 + 1);
/** Strings that look like numbers, booleans, paths or nothing. */
const nastyString = fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e999', '', ' ', '0x10', '1_000', 'true', 'null', '-1', '1e-9', '00.1', '.5', '__proto__', 'constructor', '../../etc/passwd', '\u0000', '\ud800', '%00', '{}', '[]');

const junkValue: fc.Arbitrary<unknown> = fc.oneof(
  nastyNumber,
  nastyString,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.string({ maxLength: 30, unit: 'binary' }),
  fc.string({ minLength: 200, maxLength: 3000 }),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);
const junkKey = fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom('access_token', '__proto__', 'constructor', 'jsonrpc', 'include_old', 'id', 'method', 'params'));

/** Values valid for a JSON schema (TypeBox output), as far as a generator can tell. */
function fromSchema(s: any): fc.Arbitrary<unknown> {
  if (Array.isArray(s.anyOf)) return fc.oneof(...s.anyOf.map(fromSchema));
  if ('const' in s) return fc.constant(s.const);
  switch (s.type) {
    case 'integer':
      return fc.integer({ min: Math.max(s.minimum ?? -1e9, Number.MIN_SAFE_INTEGER), max: Math.min(s.maximum ?? 1e9, Number.MAX_SAFE_INTEGER) });
    case 'number':
      return fc.oneof(fc.integer({ min: -100, max: 5000 }).map((n) => n / 1000), fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true }));
    case 'boolean':
      return fc.boolean();
    case 'string':
      if (typeof s.pattern === 'string' && /^\^\[0-9\]\{\d+,\d+\}\$$/.test(s.pattern)) return fc.stringMatching(new RegExp(s.pattern));
      return fc.string({ minLength: s.minLength ?? 0, maxLength: Math.min(s.maxLength ?? 40, 80) });
    default:
      return junkValue;
  }
}

describe('input fuzzing of the authentication, invite and trading groups', () => {
  let server: TestServer;
  let url: string;
  let atm: Market;
  let cheap: Market;
  const sessions = {} as Record<'user' | 'other' | 'admin', Session>;
  const throwaway: Record<'user' | 'other' | 'admin', string[]> = { user: [], other: [], admin: [] };
  const domain: Record<string, fc.Arbitrary<unknown>> = {};
  let runs = 0;
  const codes = new Map<number, number>();

  before(async () => {
    server = await startServer();
    url = server.url;
    const admin = await adminToken(url);
    await userToken(url, admin, 'user@example.com', { currency: 'BTC', amount: 100 });
    await userToken(url, admin, 'other@example.com', { currency: 'BTC', amount: 100 });
    for (const role of ['user', 'other', 'admin'] as const) {
      const t = await ok(url, 'public/auth', { grant_type: 'password', ...CREDENTIALS[role] });
      sessions[role] = { access: t.access_token, refresh: t.refresh_token };
    }
    await ok(url, 'private/deposit_collateral', { currency: 'ETH', amount: 100 }, sessions.user.access);
    atm = await atmCall(url);
    cheap = await cheapCall(url);
    const orderIds: string[] = [];
    for (const role of ['user', 'other'] as const) {
      const r = await ok(url, 'private/sell', { instrument_name: atm.name, amount: 0.2, price: atm.prices[atm.prices.length - 1 - orderIds.length] }, sessions[role].access);
      orderIds.push(r.order.order_id);
    }
    const filled = await ok(url, 'private/sell', { instrument_name: cheap.name, amount: 0.1, price: cheap.prices[3] }, sessions.other.access);
    await ok(url, 'private/buy', { instrument_name: cheap.name, amount: 0.1, price: cheap.prices[3] }, sessions.user.access);
    orderIds.push(filled.order.order_id);
    // logout revokes the token it is called with (and its refresh token): it gets throwaway sessions
    const logins = (['user', 'other', 'admin'] as const).flatMap((role) => Array.from({ length: 15 }, () => role));
    const tokens = await Promise.all(logins.map((role) => ok(url, 'public/auth', { grant_type: 'password', ...CREDENTIALS[role] })));
    logins.forEach((role, i) => throwaway[role].push(tokens[i].access_token));
    const invite = await ok(url, 'private/generate_invite_code', { max_uses: 50 }, sessions.admin.access);
    // refresh tokens the fuzzer may spend (the sessions' own stay with the harness)
    const spare = await ok(url, 'public/auth', { grant_type: 'password', username: 'user@example.com', password: PW });
    const now: number = await ok(url, 'public/get_time');

    Object.assign(domain, {
      instrument_name: fc.constantFrom(atm.name, cheap.name, 'BTC-1JAN20-1000-C', atm.name.toLowerCase()),
      price: fc.oneof(fc.constantFrom(...atm.prices.slice(0, 4), ...atm.prices.slice(-4), ...cheap.prices.slice(0, 4)), fc.double({ min: -1, max: 2, noNaN: true })),
      amount: fc.constantFrom(0.1, 0.2, 0.3, 1, 0.15, 0.05, 2.5),
      contracts: fc.constantFrom(0.1, 0.2, 1, 0.15),
      order_id: fc.constantFrom(...orderIds, '1', '0', '999999999999999', 'BTC-1'),
      code: fc.constantFrom(invite.code, 'unknown-code'),
      invite_code: fc.constantFrom(invite.code, 'unknown-code'),
      refresh_token: fc.constantFrom(spare.refresh_token, 'not-a-refresh-token'),
      username: fc.constantFrom('user@example.com', 'USER@example.com', 'nobody@example.com'),
      password: fc.oneof(fc.constantFrom(PW, 'wrong-password', 'pass\ud800word'), fc.string({ minLength: 8, maxLength: 20 })),
      email: fc.oneof(fc.emailAddress().filter((e) => e.length <= 254), fc.constantFrom('user@example.com', 'not-an-email')),
      start_timestamp: fc.constantFrom(0, now - 60_000, now + 60_000),
      end_timestamp: fc.constantFrom(0, now, now + 60_000),
      user_id: fc.constantFrom(1, 2, 3, 99999),
      bootstrap_token: fc.constantFrom(BOOTSTRAP, 'wrong'),
    });
  });

  after(() => server.stop());

  function paramsArb(def: MethodDef): fc.Arbitrary<Record<string, unknown>> {
    const props = (def.params as any).properties as Record<string, unknown>;
    const keys = Object.keys(props);
    const values = keys.map((k) =>
      fc.option(fc.oneof({ arbitrary: domain[k] ?? fromSchema(props[k]), weight: 4 }, { arbitrary: fromSchema(props[k]), weight: 2 }, { arbitrary: junkValue, weight: 1 }), {
        nil: undefined,
        freq: 4,
      }),
    );
    return fc.tuple(fc.tuple(...values), fc.dictionary(junkKey, junkValue, { maxKeys: 3 })).map(([vs, extra]) => {
      const p: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(extra)) Object.defineProperty(p, k, { value: v, enumerable: true, writable: true, configurable: true });
      keys.forEach((k, i) => {
        if (vs[i] !== undefined) p[k] = vs[i];
      });
      return p;
    });
  }

  function tokenOf(role: Role, def: MethodDef): string | undefined {
    if (role === 'none') return undefined;
    if (role === 'bogus') return 'bogus-token';
    if (def.name === 'private/logout') return throwaway[role].pop() ?? 'bogus-token';
    return sessions[role].access;
  }

  /** The harness's own sessions must survive the fuzzing, or later runs would test nothing. */
  function assertSessions(): void {
    for (const role of ['user', 'other', 'admin'] as const) {
      assert.ok(server.app.services.ex.auth.access.has(sha256Hex(sessions[role].access)), `the ${role} session is still valid`);
    }
  }

  const methods = GROUPS.flatMap((g) => methodGroups[g]);

  for (const def of methods) {
    const names = [def.name, ...(def.aliases ?? [])];
    it(`${def.name} answers random params with a well-formed envelope and never a 5xx`, async () => {
      await fc.assert(
        fc.asyncProperty(
          paramsArb(def),
          fc.constantFrom<Role>('none', 'user', 'other', 'admin', 'bogus'),
          fc.oneof({ arbitrary: fc.constantFrom('GET', 'POST', 'JSON-RPC'), weight: 6 }, { arbitrary: fc.constant('raw'), weight: 1 }),
          fc.constantFrom(...PREFIXES),
          fc.constantFrom(...names),
          fc.oneof(fc.integer(), fc.string({ maxLength: 10 }), fc.constant(null)),
          fc.string({ maxLength: 60, unit: 'binary' }),
          async (params, role, mode, prefix, name, id, rawBody) => {
            const token = tokenOf(role, def);
            let r;
            if (mode === 'raw') {
              const headers: Record<string, string> = { 'content-type': 'application/json' };
              if (token) headers.authorization = `Bearer ${token}`;
              r = await request(url, `${prefix}${name}`, { method: 'POST', headers, body: rawBody });
            } else {
              r = await rpc(url, name, params, token, { prefix, get: mode === 'GET', ...(mode === 'JSON-RPC' ? { jsonrpc: { id } } : {}) });
            }
            runs++;
            const where = `${mode} ${prefix}${name} as ${role}: ${JSON.stringify(mode === 'raw' ? rawBody : params).slice(0, 300)}`;
            assert.ok(r.status < 500, `HTTP ${r.status} for ${where}: ${JSON.stringify(r.body)}`);
            // a body holding `jsonrpc` and `method` is a JSON-RPC request, whatever else it holds
            const asRequest = mode === 'POST' && 'jsonrpc' in params && 'method' in params;
            const sent = (x: unknown) => (x === undefined ? undefined : JSON.parse(JSON.stringify(x)));
            // an id JSON-RPC does not allow (an object, a string over 256 characters) is refused with
            // -32600 and answered with a null id: it cannot be echoed safely (src/api/rpc/validate.ts)
            const badId = asRequest && !validRpcId(params.id);
            const echo = mode === 'JSON-RPC' ? { id: sent(id) } : asRequest ? { id: badId ? null : sent(params.id) } : {};
            assertEnvelope(r, { where, testnet: true, ...echo });
            if (badId) assert.equal(r.body.error?.code, -32600, `an id JSON-RPC does not allow is refused (${where})`);
            assert.notEqual(r.body.error?.code, -32601, `${where} is routed`);
            const code = r.body.error?.code ?? 0;
            codes.set(code, (codes.get(code) ?? 0) + 1);
            assertSessions();
          },
        ),
        { numRuns: RUNS[def.name] ?? RUNS_PER_METHOD, includeErrorInReport: true },
      );
    });
  }

  /** Path parameters a router can trip over: long, encoded, half-encoded, dotted, unicode, empty. */
  const oddPathValue: fc.Arbitrary<string> = fc.oneof(
    fc.string({ minLength: 150, maxLength: 3000 }).map(encodeURIComponent),
    fc.string({ maxLength: 40, unit: 'binary' }).map(encodeURIComponent),
    fc.string({ maxLength: 40, unit: 'grapheme' }).map(encodeURIComponent),
    fc.constantFrom('%', '%Z', '%ZZ', '%E0%A4%A', '%C0%AF', '%00', '%2F', '..', '.', '%2E%2E%2F%2E%2E', 'BTC-27MAR26-100000-C%20', ';x=1', '~', '-1', '0', '1e999', '99999999999999999999', 'BTC-27MAR26-100000-C?x=%'),
    fc.tuple(fc.constantFrom('BTC-', 'btc', 'ETH-1JAN30-', ''), fc.stringMatching(/^[A-Za-z0-9%._~-]{0,400}$/)).map(([a, b]) => a + b),
  );

  const pathParamMethods = allMethods.filter((d) => d.pathParam);
  it(`every method with a path parameter (${pathParamMethods.length}) answers long and odd path values with an envelope, never a 5xx`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...pathParamMethods).chain((def) => fc.constantFrom(def.name, ...(def.aliases ?? []))), fc.constantFrom(...PREFIXES), fc.constantFrom('GET', 'POST'), oddPathValue, async (name, prefix, verb, value) => {
        const target = `${prefix}${name}/${value}`;
        const r = await rawRequest(url, verb, target, verb === 'POST' ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {});
        runs++;
        const where = `${verb} ${target.slice(0, 200)}`;
        assert.ok(r.status < 500, `HTTP ${r.status} for ${where}: ${r.text.slice(0, 300)}`);
        assert.ok(r.body !== null, `${where}: an envelope, got ${r.status} ${r.text.slice(0, 200)}`);
        // a path parameter over the router's limit is 414 with -32602; everything else has the status of its code
        if (r.status === 414) assert.equal(r.body.error?.code, -32602, where);
        assertEnvelope(r, { where, testnet: true, ...(r.status === 414 ? { status: 414 } : {}) });
        if (r.body.error) assert.notEqual(r.body.error.code, -32601, `${where} is routed`);
      }),
      { numRuns: 400, includeErrorInReport: true },
    );
  });

  it('ran hundreds of calls, some of which got through to the domain', () => {
    assert.ok(runs >= 500, `runs: ${runs}`);
    assert.ok((codes.get(0) ?? 0) > 20, `successes: ${codes.get(0)}`);
    // the fuzzer reached beyond parameter validation
    const domainCodes = [...codes.keys()].filter((c) => c >= 10000);
    assert.ok(domainCodes.length >= 5, `domain error codes seen: ${domainCodes.join(', ')}`);
  });

  it('still serves, with every balance and position consistent, after the fuzzing', async () => {
    const h = await request(url, '/health');
    assert.equal(h.status, 200);
    assert.equal(h.body.status, 'ok');
    assertSessions();
    const r = await rpc(url, 'private/get_open_orders_by_currency', { currency: 'BTC' }, sessions.user.access);
    assert.ok(Array.isArray(r.body.result));
    assert.ok(Number.isInteger(await ok(url, 'public/get_time')));
    const ex = server.app.services.ex;
    for (const c of Object.values(ex.conservation())) assert.equal(c.balances, c.expected);
    const sizes = new Map<number, number>();
    for (const u of ex.users.values()) for (const [id, p] of u.positions) sizes.set(id, (sizes.get(id) ?? 0) + p.size);
    for (const s of sizes.values()) assert.equal(s, 0);
  });
});
