// An access_token among the params (Deribit clients send it with every private call) authenticates
// that call, and no handler sees it: it is declared to the validator only so that dropping it does
// not turn the params object into a slow dictionary (src/api/rpc/validate.ts).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Type } from '@sinclair/typebox';
import { compileValidators, validateParams } from '../../src/api/rpc/validate.ts';

describe('access_token among the params', () => {
  const v = compileValidators(Type.Object({ currency: Type.String() }));

  it('is blanked after validation, and other undeclared keys are still dropped', () => {
    const params: Record<string, unknown> = { currency: 'BTC', access_token: 'secret-token', junk: 1 };
    assert.equal(validateParams(v, params, false), null);
    assert.equal(params.access_token, undefined);
    assert.equal('junk' in params, false);
    assert.equal(JSON.stringify(params), '{"currency":"BTC"}', 'a handler that serializes its params leaks no token');
  });

  it('keeps the params object in fast (non-dictionary) mode', () => {
    // V8's own answer, in a child with natives syntax on. The old code deleted the key after the
    // defaults were added (as private/buy's are), and the object became a dictionary.
    const script = `
      import { Type } from '@sinclair/typebox';
      import { compileValidators, validateParams } from './src/api/rpc/validate.ts';
      const fast = new Function('o', 'return %HasFastProperties(o)');
      const v = compileValidators(Type.Object({ instrument_name: Type.String(), amount: Type.Number(), label: Type.String({ default: '' }) }));
      const p = JSON.parse('{"instrument_name":"BTC-PERPETUAL","amount":10,"access_token":"t"}');
      validateParams(v, p, false);
      console.log(JSON.stringify({ fast: fast(p) }));`;
    const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    assert.deepEqual(JSON.parse(out.trim().split('\n').pop()!), { fast: true });
  });

  it('from a query string too', () => {
    const params: Record<string, unknown> = { currency: 'BTC', access_token: 'secret-token' };
    assert.equal(validateParams(v, params, true), null);
    assert.equal(params.access_token, undefined);
  });
});

describe('validators compiled at first use', () => {
  it('every method\'s schema compiles, for queries and bodies (a broken one would otherwise surface at its first call only)', async () => {
    const { allMethods } = await import('../../src/api/methods/index.ts');
    for (const def of allMethods) {
      const v = compileValidators(def.params);
      assert.equal(typeof v.query, 'function', def.name);
      assert.equal(typeof v.body, 'function', def.name);
    }
  });
});
