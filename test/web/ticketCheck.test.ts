// The order ticket's own checks (web/src/lib/ticketCheck.ts): each bad amount or price named for
// what it is, the premium worked exactly in decimal, and a warning for a premium beyond the funds.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { amountProblem, premiumText, premiumWarning, priceProblem, toScaled } from '../../web/src/lib/ticketCheck.ts';

describe('the order ticket checks', () => {
  it('names each amount problem instead of one code for all', () => {
    assert.equal(amountProblem('', 0.1), null);
    assert.equal(amountProblem('abc', 0.1), 'Amount is not a number');
    assert.equal(amountProblem('-1', 0.1), 'Amount must be positive');
    assert.equal(amountProblem('0', 0.1), 'Amount must be positive');
    assert.equal(amountProblem('100000000', 0.1), 'Amount is at most 100,000');
    assert.equal(amountProblem('0.15', 0.1), 'Amount must be a multiple of 0.1');
    assert.equal(amountProblem('0.000000001', 0.1), 'Amount has more than 8 decimals');
    assert.equal(amountProblem('0.3', 0.1), null); // 0.3 is not a float multiple of 0.1, but is one exactly
    assert.equal(amountProblem('1,000', 1), null);
  });

  it('names each price problem', () => {
    assert.equal(priceProblem(''), null);
    assert.equal(priceProblem('x'), 'Price is not a number');
    assert.equal(priceProblem('-0.01'), 'Price must be positive');
    assert.equal(priceProblem('0.00001'), 'Price has more than 4 decimals (tick 0.0001)');
    assert.equal(priceProblem('0.0135'), null);
  });

  it('works the premium exactly, to 8 decimals', () => {
    assert.equal(premiumText('0.0135', '0.1'), '0.00135000');
    assert.equal(premiumText('0.0001', '0.1'), '0.00001000');
    assert.equal(premiumText('0.0135', '1200000'), '16,200.00000000');
    assert.equal(premiumText('0.1', '0.3'), '0.03000000'); // 0.1 * 0.3 = 0.030000000000000002 in floats
    assert.equal(premiumText('-1', '1'), null);
    assert.equal(premiumText('abc', '1'), null);
    assert.equal(toScaled('1.50', 2), 150n);
  });

  it('warns of a premium beyond the funds and a price above one coin', () => {
    assert.match(String(premiumWarning('buy', '0.05', '1000', 10)), /more than the 10 available/);
    assert.equal(premiumWarning('buy', '0.05', '1', 10), null);
    assert.equal(premiumWarning('sell', '0.05', '1000', 10), null);
    assert.match(String(premiumWarning('buy', '2', '1', 100)), /never costs more than 1 coin/);
  });
});
