// The hold on refusals (src/app/credits.ts refusalHold): a client that waits as told by
// retry_after_ms is answered at once; one that resends while refused queues behind its own
// refusals, one request's refill per resend, at most holdMaxMs. Exact arithmetic on a pinned clock.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { CreditLimiter, REQUEST_COST, type Charge } from '../../src/app/credits.ts';

const LIMITS = { maxCredits: 2 * REQUEST_COST, refillPerSec: 5 * REQUEST_COST }; // burst 2, 5/s: 200 ms a request
const STEP = 200;

function setup(holdMaxMs: number) {
  let t = 1_000_000;
  const limiter = new CreditLimiter(() => t, true, 4, holdMaxMs);
  const charge: Charge = { subjects: [7], pool: 'matching', limits: LIMITS };
  /** One request: 0 when it passes, else [wait, hold]. */
  const send = (): 0 | [number, number] => {
    const wait = limiter.take(charge, REQUEST_COST);
    return wait === 0 ? 0 : [wait, limiter.refusalHold(charge, wait, REQUEST_COST)];
  };
  return { send, advance: (ms: number) => (t += ms), limiter, charge };
}

describe('refusal hold', () => {
  it('answers the first refusal at once, and holds resends one refill step further each, up to the maximum', () => {
    const { send } = setup(1000);
    assert.equal(send(), 0);
    assert.equal(send(), 0);
    assert.deepEqual(send(), [STEP, 0], 'the first refusal is not held');
    // resent at once, five times: each queues one step behind the last, capped at 1000 ms
    assert.deepEqual([send(), send(), send(), send(), send(), send()], [
      [STEP, 400],
      [STEP, 600],
      [STEP, 800],
      [STEP, 1000],
      [STEP, 1000],
      [STEP, 1000],
    ]);
  });

  it('does not hold a client that waited the retry_after it was given', () => {
    const { send, advance } = setup(1000);
    send();
    send();
    const [wait] = send() as [number, number];
    advance(wait);
    assert.equal(send(), 0, 'the wait refilled one request');
    const refused = send() as [number, number];
    assert.equal(refused[1], 0, 'refused again, but it had waited as told: not held');
  });

  it('forgets the queue once its horizon has passed', () => {
    const { send, advance } = setup(1000);
    send();
    send();
    send();
    send();
    send(); // horizon 600 ms ahead
    advance(600);
    assert.equal(send(), 0, 'the pool refilled (to its burst of 2)');
    assert.equal(send(), 0);
    assert.deepEqual(send(), [STEP, 0], 'a refusal after the horizon starts a new one');
  });

  it('never holds with a maximum of 0 (STRIKEBOOK_RATE_LIMIT_HOLD_MAX_MS=0)', () => {
    const { send } = setup(0);
    send();
    send();
    for (let i = 0; i < 5; i++) assert.deepEqual(send(), [STEP, 0]);
  });

  it('holds a subject only for its own refusals: another user is answered at once', () => {
    const { send, limiter } = setup(1000);
    send();
    send();
    send();
    send();
    const other: Charge = { subjects: [8], pool: 'matching', limits: LIMITS };
    assert.equal(limiter.take(other, REQUEST_COST), 0);
    assert.equal(limiter.take(other, REQUEST_COST), 0);
    const wait = limiter.take(other, REQUEST_COST);
    assert.equal(limiter.refusalHold(other, wait, REQUEST_COST), 0);
  });
});
