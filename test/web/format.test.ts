// The web app's number and time formatting (web/src/lib/format.ts): what a trader reads on screen.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fmt from '../../web/src/lib/format.ts';

describe('web number formatting', () => {
  it('shows option prices with four decimals and a dash where there is no price', () => {
    assert.equal(fmt.price(0.0425), '0.0425');
    assert.equal(fmt.price(0.1), '0.1000');
    assert.equal(fmt.price(1.23456), '1.2346');
    assert.equal(fmt.price(0), '–');
    assert.equal(fmt.price(null), '–');
    assert.equal(fmt.price(Number.NaN), '–');
  });

  it('shows amounts with the digits they have, without float dust', () => {
    assert.equal(fmt.amount(0.1), '0.1');
    assert.equal(fmt.amount(0.1 + 0.2), '0.3');
    assert.equal(fmt.amount(12), '12');
    assert.equal(fmt.amount(1234.5), '1,234.5');
    assert.equal(fmt.amount(-0.7), '-0.7');
    assert.equal(fmt.amount(undefined), '–');
  });

  it('groups thousands, never shows a negative zero, and formats dollars, IV and greeks', () => {
    assert.equal(fmt.fixed(1234567.891, 2), '1,234,567.89');
    assert.equal(fmt.fixed(-0.000001, 4), '0.0000');
    assert.equal(fmt.fixed(-12.5, 1), '-12.5');
    assert.equal(fmt.usd(100000), '$100,000.00');
    assert.equal(fmt.iv(61.234), '61.2%');
    assert.equal(fmt.iv(null), '–');
    assert.equal(fmt.greek(0.52345, 2), '0.52');
    assert.equal(fmt.greek(0.5, 2, true), '+0.50');
    assert.equal(fmt.greek(-0.5, 2, true), '-0.50');
    assert.equal(fmt.coin(0.00012345), '0.00012345');
    assert.equal(fmt.strike(105000), '105,000');
  });

  it('shows time to expiry in days and hours, hours and minutes, or minutes', () => {
    const now = Date.parse('2026-03-10T12:00:00Z');
    assert.equal(fmt.timeToExpiry(Date.parse('2026-03-13T08:00:00Z'), now), '2d 20h');
    assert.equal(fmt.timeToExpiry(Date.parse('2026-03-11T08:00:00Z'), now), '20h 0m');
    assert.equal(fmt.timeToExpiry(now + 90_000, now), '1m');
    assert.equal(fmt.timeToExpiry(now + 10_000, now), '1m');
    assert.equal(fmt.timeToExpiry(now, now), 'expired');
    assert.equal(fmt.expiryCode(Date.parse('2026-03-27T08:00:00Z')), '27MAR26');
    assert.equal(fmt.expiryCode(Date.parse('2026-12-04T08:00:00Z')), '4DEC26');
    assert.equal(fmt.utc(Date.parse('2026-03-10T12:00:05Z')), '2026-03-10 12:00:05');
  });

  it('reads typed numbers with grouping and refuses anything else', () => {
    assert.equal(fmt.parseInput('0.05'), 0.05);
    assert.equal(fmt.parseInput(' 1,000.5 '), 1000.5);
    assert.equal(fmt.parseInput('.5'), 0.5);
    assert.equal(fmt.parseInput('1e3'), null);
    assert.equal(fmt.parseInput('abc'), null);
    assert.equal(fmt.parseInput(''), null);
  });

  it('rounds a price onto the tick grid in force at that price', () => {
    const inst = { tick_size: 0.0001, tick_size_steps: [{ above_price: 0.005, tick_size: 0.0005 }] };
    assert.equal(fmt.roundToTick(inst, 0.00123), 0.0012);
    assert.equal(fmt.roundToTick(inst, 0.0427), 0.0425);
    assert.equal(fmt.roundToTick(inst, 0.0428), 0.043);
    assert.equal(fmt.roundToTick(inst, 0.00001), 0.0001);
  });
});
