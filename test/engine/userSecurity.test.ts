// Password change and user disable as engine commands (src/engine/userSecurity.ts): what each
// revokes, what it refuses, and that a journal holding them replays (and a snapshot restores) to the
// same state hash.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Command, Sequenced } from '../../src/engine/commands.ts';
import { Exchange } from '../../src/engine/exchange.ts';
import type { User } from '../../src/engine/types.ts';
import { restore, serialize, stateHash } from '../../src/engine/snapshot.ts';
import { decodeCommand, encodeCommand } from '../../src/journal/commandCodec.ts';
import { applyCommand } from '../../src/sequencer/sequencer.ts';
import { Harness, code } from '../helpers/engine.ts';

const HOUR = 3_600_000;

/** A harness that keeps every command it applied, as a journal would. */
class Journaled extends Harness {
  readonly journal: Sequenced[] = [];
  override apply(cmd: Command, ts?: number): unknown {
    if (ts !== undefined && ts > this.ts) this.ts = ts;
    const seq: Sequenced = { ...cmd, ts: this.ts, seq: ++this.seq } as Sequenced;
    this.journal.push(seq);
    return this.ex.apply(seq);
  }
}

function login(h: Harness, userId: number, name: string, scope = 'connection'): void {
  h.apply({ t: 'issue_token', userId, access: `a-${name}`, refresh: `r-${name}`, scope, accessTtl: HOUR, refreshTtl: 720 * HOUR, replaces: null });
}

function setup(): { h: Journaled; admin: number; a: number; b: number } {
  const h = new Journaled();
  const admin = (h.apply({ t: 'create_user', email: 'admin@test.io', passwordHash: 'admin-hash', role: 'admin', inviteCode: null, by: null }) as User).id;
  const a = h.user();
  const b = h.user();
  login(h, a, 'a1');
  login(h, a, 'a2');
  login(h, a, 'akey', 'trade:read_write api_key:1');
  login(h, b, 'b1');
  return { h, admin, a, b };
}

test('a password change replaces the hash and ends every password session of the user, not its API-key sessions nor other users', () => {
  const { h, a } = setup();
  assert.equal(h.apply({ t: 'change_password', userId: a, was: 'x', passwordHash: 'new-hash' }), true);
  assert.equal(h.u(a).passwordHash, 'new-hash');
  for (const k of ['a1', 'a2']) {
    assert.equal(h.ex.auth.access.has(`a-${k}`), false, `access ${k} revoked`);
    assert.equal(h.ex.auth.refresh.has(`r-${k}`), false, `refresh ${k} revoked`);
  }
  assert.equal(h.ex.auth.sessionCount(a), 0);
  assert.equal(h.ex.auth.access.has('a-akey'), true, 'the API key session stays');
  assert.equal(h.ex.auth.access.has('a-b1'), true, "another user's session stays");
});

test('a password change over a hash other than the one verified is refused and changes nothing', () => {
  const { h, a } = setup();
  h.apply({ t: 'change_password', userId: a, was: 'x', passwordHash: 'first' });
  login(h, a, 'a3');
  const r = h.apply({ t: 'change_password', userId: a, was: 'x', passwordHash: 'second' });
  assert.equal(code(r), 13004);
  assert.equal(h.u(a).passwordHash, 'first');
  assert.equal(h.ex.auth.access.has('a-a3'), true, 'the session opened after the first change stays');
});

test('disabling a user revokes all its tokens, refuses new ones until enabled again, and is for administrators only', () => {
  const { h, admin, a, b } = setup();
  assert.equal(code(h.apply({ t: 'set_user_disabled', userId: a, disabled: true, by: b })), 13021, 'not by a user');
  assert.equal(code(h.apply({ t: 'set_user_disabled', userId: 999, disabled: true, by: admin })), 13020, 'unknown user');
  assert.equal(code(h.apply({ t: 'set_user_disabled', userId: admin, disabled: true, by: admin })), 11029, 'not oneself');
  assert.deepEqual(h.apply({ t: 'set_user_disabled', userId: a, disabled: true, by: admin }), { user_id: a, disabled: true });
  for (const k of ['a1', 'a2', 'akey']) assert.equal(h.ex.auth.access.has(`a-${k}`), false, `access ${k} revoked`);
  assert.equal(h.ex.auth.refresh.size, 1, "only the other user's refresh token is left");
  const issue = { t: 'issue_token', userId: a, access: 'a-late', refresh: 'r-late', scope: 'connection', accessTtl: HOUR, refreshTtl: HOUR, replaces: null } as const;
  assert.equal(code(h.apply(issue)), 13009, 'no token while disabled');
  assert.equal(code(h.apply({ t: 'change_password', userId: a, was: 'x', passwordHash: 'y' })), 13009, 'no password change while disabled');
  h.apply({ t: 'set_user_disabled', userId: a, disabled: false, by: admin });
  assert.equal(h.apply(issue), true, 'a token again once enabled');
  assert.equal(h.ex.auth.access.has('a-a1'), false, 'enabling again revives no old token');
});

test('a journal with password changes and disables replays, and a snapshot restores, to the same state hash', () => {
  const { h, admin, a, b } = setup();
  h.apply({ t: 'change_password', userId: a, was: 'x', passwordHash: 'new-hash' });
  const beforeDisable = stateHash(h.ex);
  h.apply({ t: 'set_user_disabled', userId: b, disabled: true, by: admin });
  assert.notEqual(stateHash(h.ex), beforeDisable, 'the disable is part of the state hash');
  const replayed = new Exchange();
  for (const cmd of h.journal) applyCommand(replayed, decodeCommand(encodeCommand(cmd), cmd.seq, cmd.ts));
  assert.equal(stateHash(replayed), stateHash(h.ex));
  const restored = restore(serialize(h.ex));
  assert.equal(stateHash(restored), stateHash(h.ex));
  assert.equal(restored.disabledUsers.has(b), true);
  assert.equal(restored.users.get(a)!.passwordHash, 'new-hash');
  // and enabled again, a state with no disabled user hashes as one that never had any
  h.apply({ t: 'set_user_disabled', userId: b, disabled: false, by: admin });
  assert.equal(JSON.parse(serialize(h.ex)).disabledUsers, undefined);
});
