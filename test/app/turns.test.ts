// The engine thread's own work cut into turns (src/app/turns.ts): the market timer's steps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runInTurns } from '../../src/app/turns.ts';

const nextTurn = () => new Promise<void>((r) => setImmediate(r));

test('runs the steps in order, one per event-loop turn, each through the wrapper', async () => {
  const ran: string[] = [];
  const wrapped: number[] = [];
  let calls = 0;
  runInTurns(
    [() => ran.push('settle'), () => ran.push('BTC'), () => ran.push('ETH')],
    (step) => {
      wrapped.push(calls++);
      step();
    },
    () => false,
  );
  // the first step runs at once; a request that arrived meanwhile is served before the next
  assert.deepEqual(ran, ['settle']);
  await Promise.resolve();
  assert.deepEqual(ran, ['settle'], 'not in a microtask of the same turn either');
  await nextTurn();
  assert.deepEqual(ran, ['settle', 'BTC']);
  await nextTurn();
  await nextTurn();
  assert.deepEqual(ran, ['settle', 'BTC', 'ETH']);
  assert.deepEqual(wrapped, [0, 1, 2], 'every step is timed on its own');
});

test('stops before the next step once stopped (a server shutting down submits nothing more)', async () => {
  const ran: number[] = [];
  let stopped = false;
  runInTurns([() => ran.push(1), () => ran.push(2), () => ran.push(3)], (step) => step(), () => stopped);
  stopped = true;
  for (let i = 0; i < 4; i++) await nextTurn();
  assert.deepEqual(ran, [1]);
});
