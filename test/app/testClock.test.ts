// The pinned test clock (STRIKEBOOK_TEST_START): where it starts, that it runs on from there, that it
// resumes after a restart, and that the settings are refused where they do not belong.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestClock } from '../../src/app/clock.ts';
import { ConfigError, loadConfig } from '../../src/app/config.ts';

const START = Date.UTC(2026, 2, 11, 7, 59, 30);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the pinned test clock', () => {
  it('starts at the pinned instant and runs on with real time', async () => {
    const c = new TestClock(START);
    const first = c.now();
    assert.ok(first >= START && first < START + 1000, `${first - START} ms after the start`);
    await sleep(30);
    assert.ok(c.now() >= first + 25, 'it advances');
  });

  it('stands still once set, and only moves forward', () => {
    const c = new TestClock(START);
    assert.equal(c.set(START + 3_600_000), true);
    assert.equal(c.now(), START + 3_600_000);
    assert.equal(c.set(START), false, 'never backwards');
    assert.equal(c.now(), START + 3_600_000);
  });

  it('resumes after a restart from the time the journal reached: pinned runs on, unpinned stands', async () => {
    const pinned = new TestClock(START);
    pinned.resumeFrom(START + 600_000);
    assert.ok(pinned.now() >= START + 600_000);
    await sleep(30);
    assert.ok(pinned.now() >= START + 600_025, 'a pinned clock goes on running');
    const wall = new TestClock();
    const ahead = Date.now() + 3_600_000;
    wall.resumeFrom(ahead);
    await sleep(10);
    assert.equal(wall.now(), ahead, 'a wall clock set ahead stands where it was set');
    const behind = new TestClock(START);
    behind.resumeFrom(START - 1000);
    assert.ok(behind.now() >= START, 'an earlier journal time changes nothing');
  });
});

describe('STRIKEBOOK_TEST_START', () => {
  it('takes an ISO time with its zone or milliseconds', () => {
    assert.equal(loadConfig({ STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_TEST_START: '2026-03-11T07:59:30Z' }).testStart, START);
    assert.equal(loadConfig({ STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_TEST_START: '2026-03-11T08:59:30+01:00' }).testStart, START);
    assert.equal(loadConfig({ STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_TEST_START: String(START) }).testStart, START);
    assert.equal(loadConfig({ STRIKEBOOK_TEST_CLOCK: '1' }).testStart, null);
  });

  it('is refused without the test clock, in production mode, and when it is not a time', () => {
    assert.throws(() => loadConfig({ STRIKEBOOK_TEST_START: '2026-03-11T07:59:30Z' }), ConfigError);
    assert.throws(() => loadConfig({ STRIKEBOOK_MODE: 'production', STRIKEBOOK_DEMO_MAKER: '0', STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_TEST_START: '2026-03-11T07:59:30Z' }), ConfigError);
    assert.throws(() => loadConfig({ STRIKEBOOK_MODE: 'production', STRIKEBOOK_DEMO_MAKER: '0', STRIKEBOOK_TEST_START: '2026-03-11T07:59:30Z' }), ConfigError);
    for (const bad of ['2026-03-11T07:59:30', 'tomorrow', '2026-13-45T99:00:00Z', '-5']) {
      assert.throws(() => loadConfig({ STRIKEBOOK_TEST_CLOCK: '1', STRIKEBOOK_TEST_START: bad }), ConfigError, bad);
    }
  });
});
