// Sessions of a key whose tokens a change has ended (issue 31: the tag `api_key:<id>.<generation>`)
// still count in the key's own group, never in its owner's password sessions (issue 14).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_SESSIONS_PER_API_KEY } from '../../src/auth/authState.ts';
import { Harness } from '../helpers/engine.ts';

const HOUR = 3_600_000;

test("a key in a later generation logging in again and again drops only its own sessions, never its owner's", () => {
  const h = new Harness();
  const a = h.user();
  h.apply({ t: 'issue_token', userId: a, access: 'pw-a', refresh: 'pw-r', scope: 'connection', accessTtl: HOUR, refreshTtl: HOUR, replaces: null });
  for (let n = 0; n < MAX_SESSIONS_PER_API_KEY + 70; n++) {
    h.apply({ t: 'issue_token', userId: a, access: `k-a-${n}`, refresh: `k-r-${n}`, scope: 'account:read api_key:1.2', accessTtl: HOUR, refreshTtl: HOUR, replaces: null });
  }
  assert.equal(h.ex.auth.access.has('pw-a'), true, "the owner's password session stays");
  assert.equal(h.ex.auth.access.has(`k-a-${MAX_SESSIONS_PER_API_KEY + 69}`), true);
  assert.equal(h.ex.auth.access.has('k-a-0'), false, "the key's oldest session went");
});
