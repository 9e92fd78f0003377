import { describe, it, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import {
  expirySchedule,
  instrumentFields,
  listingsFor,
  loadCatalogConfig,
  parseCatalogConfig,
  strikeGrid,
} from '../../src/market/catalog.ts';
import type { CatalogConfig, CurrencyCatalogConfig, ScheduledExpiry } from '../../src/market/catalog.ts';
import { parseInstrumentName } from '../../src/domain/instrument.ts';

const DAY = 24 * 3600 * 1000;
const at8 = (y: number, m: number, d: number) => Date.UTC(y, m, d, 8);

const DEFAULTS: CatalogConfig = {
  currencies: [
    {
      currency: 'BTC',
      minTradeAmount: '0.1',
      tickSize: '0.0001',
      tickSizeSteps: [{ abovePrice: '0.005', tickSize: '0.0005' }],
      commission: '0.0003',
      strikes: { nearPct: 0.2, nearStep: 1000, farStep: 5000, minPct: 0.5, maxPct: 2 },
      initialIndex: 100000,
    },
    {
      currency: 'ETH',
      minTradeAmount: '1',
      tickSize: '0.0001',
      tickSizeSteps: [{ abovePrice: '0.005', tickSize: '0.0005' }],
      commission: '0.0003',
      strikes: { nearPct: 0.2, nearStep: 50, farStep: 200, minPct: 0.5, maxPct: 2 },
      initialIndex: 4000,
    },
  ],
  schedule: { dailies: 2, weeklies: 2, monthlies: 2, quarterlies: 2 },
};

const BTC = DEFAULTS.currencies[0];
const ETH = DEFAULTS.currencies[1];

function range(from: number, to: number, step: number): number[] {
  const out: number[] = [];
  for (let x = from; x <= to; x += step) out.push(x);
  return out;
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

describe('loadCatalogConfig', () => {
  it('loads the default catalog of API.md 7.1 from config/catalog.json', () => {
    assert.deepEqual(loadCatalogConfig(), DEFAULTS);
  });

  it('names the file when it cannot be read or is not JSON', () => {
    const dir = mkdtempSync(join(tmpdir(), 'strikebook-catalog-'));
    try {
      const missing = join(dir, 'missing.json');
      assert.throws(() => loadCatalogConfig(missing), (e: Error) => e.message.includes(missing) && /cannot read/.test(e.message));
      const broken = join(dir, 'broken.json');
      writeFileSync(broken, '{ "currencies": [');
      assert.throws(() => loadCatalogConfig(broken), /broken\.json: invalid JSON/);
      const ok = join(dir, 'ok.json');
      writeFileSync(ok, JSON.stringify({ ...DEFAULTS, currencies: [ETH] }));
      assert.deepEqual(loadCatalogConfig(ok).currencies.map((c) => c.currency), ['ETH']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('parseCatalogConfig', () => {
  const cases: [string, (c: any) => void, RegExp][] = [
    ['currencies that are not an array', (c) => (c.currencies = { BTC: {} }), /currencies: must be a non-empty array/],
    ['an empty currency list', (c) => (c.currencies = []), /currencies: must be a non-empty array/],
    ['an unknown currency', (c) => (c.currencies[0].currency = 'DOGE'), /currencies\[0\]\.currency: must be one of BTC, ETH/],
    ['a non-option currency', (c) => (c.currencies[0].currency = 'USDC'), /currencies\[0\]\.currency/],
    ['a duplicated currency', (c) => (c.currencies[1].currency = 'BTC'), /currencies\[1\]\.currency: BTC is listed twice/],
    ['a number where a decimal string is expected', (c) => (c.currencies[0].tickSize = 0.0001), /tickSize: must be a decimal string/],
    ['a tick finer than the price scale', (c) => (c.currencies[0].tickSize = '0.00001'), /tickSize: "0.00001" is not a decimal with at most 4 decimals/],
    ['a zero lot', (c) => (c.currencies[0].minTradeAmount = '0'), /minTradeAmount: must be > 0/],
    ['a lot finer than the amount scale', (c) => (c.currencies[0].minTradeAmount = '0.000000001'), /minTradeAmount/],
    ['a negative commission', (c) => (c.currencies[0].commission = '-0.0003'), /commission: must be >= 0/],
    ['a step tick off the base grid', (c) => (c.currencies[0].tickSize = '0.0002'), /tickSizeSteps\[0\]\.tickSize: must be a multiple of the base tick/],
    ['a step starting off its own grid', (c) => (c.currencies[0].tickSizeSteps[0].abovePrice = '0.0052'), /abovePrice: must be a multiple of its tick/],
    [
      'descending steps',
      (c) => c.currencies[0].tickSizeSteps.push({ abovePrice: '0.001', tickSize: '0.0001' }),
      /tickSizeSteps\[1\]\.abovePrice: must be above the previous step/,
    ],
    ['a far step that is not a multiple of the near step', (c) => (c.currencies[1].strikes.farStep = 75), /farStep: must be a multiple of nearStep/],
    ['a fractional strike step', (c) => (c.currencies[0].strikes.nearStep = 0.5), /nearStep: must be a number that is a positive integer/],
    ['a near band of 100%', (c) => (c.currencies[0].strikes.nearPct = 1), /nearPct: must be a number strictly between 0 and 1/],
    ['a grid that does not reach the index', (c) => (c.currencies[0].strikes.maxPct = 0.9), /maxPct: must be a number >= 1/],
    ['a zero index', (c) => (c.currencies[0].initialIndex = 0), /initialIndex: must be a number > 0/],
    ['a typo in a key', (c) => (c.currencies[0].strikes.nearstep = 1000), /strikes: unknown key "nearstep"/],
    ['a missing key', (c) => delete c.currencies[0].commission, /currencies\[0\]: missing key "commission"/],
    ['a fractional schedule count', (c) => (c.schedule.weeklies = 1.5), /schedule\.weeklies: must be an integer from 0 to 100/],
    ['a negative schedule count', (c) => (c.schedule.dailies = -1), /schedule\.dailies/],
    ['an empty schedule', (c) => (c.schedule = { dailies: 0, weeklies: 0, monthlies: 0, quarterlies: 0 }), /schedule: lists no expiry/],
  ];
  for (const [what, mutate, message] of cases) {
    it(`rejects ${what} with a clear message`, () => {
      const c = clone(DEFAULTS);
      mutate(c);
      assert.throws(() => parseCatalogConfig(c, 'test.json'), (e: Error) => {
        assert.match(e.message, /^catalog config test\.json: /);
        assert.match(e.message, message);
        return true;
      });
    });
  }

  it('rejects a root that is not an object', () => {
    assert.throws(() => parseCatalogConfig([DEFAULTS]), /root: must be an object/);
    assert.throws(() => parseCatalogConfig(null), /root: must be an object/);
  });

  it('ignores "$" comment keys and drops them from the result', () => {
    const c: any = clone(DEFAULTS);
    c.$comment = 'hello';
    c.currencies[0].$note = 'BTC';
    assert.deepEqual(parseCatalogConfig(c), DEFAULTS);
  });

  it('accepts a currency without tick steps and with a zero commission', () => {
    const c = clone(DEFAULTS);
    c.currencies[0].tickSizeSteps = [];
    c.currencies[0].commission = '0';
    const parsed = parseCatalogConfig(c);
    assert.deepEqual(instrumentFields(parsed.currencies[0]), {
      tick: 1,
      tickSteps: [],
      lotScaled: 10_000_000,
      makerCommission: 0,
      takerCommission: 0,
      contractSize: 1,
    });
  });
});

describe('instrumentFields', () => {
  it('converts the BTC grid to price units, scaled lots and minor units', () => {
    assert.deepEqual(instrumentFields(BTC), {
      tick: 1,
      tickSteps: [{ abovePrice: 50, tick: 5 }],
      lotScaled: 10_000_000,
      makerCommission: 30_000,
      takerCommission: 30_000,
      contractSize: 1,
    });
  });

  it('gives ETH a lot of one coin', () => {
    assert.equal(instrumentFields(ETH).lotScaled, 100_000_000);
    assert.equal(instrumentFields(ETH).makerCommission, 30_000);
  });
});

describe('expirySchedule', () => {
  it('lists today\'s and tomorrow\'s dailies, two Fridays, two month-ends and two quarter-ends on Sunday 22 Nov 2026 03:00', () => {
    // 22 Nov 2026 is a Sunday; today's 08:00 is still ahead. 27 Nov is a Friday and the last Friday of
    // November; 25 Dec is the last Friday of December and of Q4; 26 Mar 2027 ends Q1 2027.
    assert.deepEqual(expirySchedule(DEFAULTS, Date.UTC(2026, 10, 22, 3, 0)), [
      { expiry: at8(2026, 10, 22), period: 'day' },
      { expiry: at8(2026, 10, 23), period: 'day' },
      { expiry: at8(2026, 10, 27), period: 'month' },
      { expiry: at8(2026, 11, 4), period: 'week' },
      { expiry: at8(2026, 11, 25), period: 'month' },
      { expiry: at8(2027, 2, 26), period: 'month' },
    ]);
  });

  it('drops an expiry at its 08:00 instant and lists the next ones', () => {
    const friday = at8(2026, 10, 27);
    assert.deepEqual(expirySchedule(DEFAULTS, friday - 1), [
      { expiry: at8(2026, 10, 27), period: 'month' },
      { expiry: at8(2026, 10, 28), period: 'day' },
      { expiry: at8(2026, 11, 4), period: 'week' },
      { expiry: at8(2026, 11, 25), period: 'month' },
      { expiry: at8(2027, 2, 26), period: 'month' },
    ]);
    assert.deepEqual(expirySchedule(DEFAULTS, friday), [
      { expiry: at8(2026, 10, 28), period: 'day' },
      { expiry: at8(2026, 10, 29), period: 'day' },
      { expiry: at8(2026, 11, 4), period: 'week' },
      { expiry: at8(2026, 11, 11), period: 'week' },
      { expiry: at8(2026, 11, 25), period: 'month' },
      { expiry: at8(2027, 0, 29), period: 'month' },
      { expiry: at8(2027, 2, 26), period: 'month' },
    ]);
  });

  it('merges a Friday that is daily, weekly, monthly and quarterly into one "month" expiry across a year end', () => {
    // Thursday 24 Dec 2026 10:00
    assert.deepEqual(expirySchedule(DEFAULTS, Date.UTC(2026, 11, 24, 10)), [
      { expiry: at8(2026, 11, 25), period: 'month' },
      { expiry: at8(2026, 11, 26), period: 'day' },
      { expiry: at8(2027, 0, 1), period: 'week' },
      { expiry: at8(2027, 0, 29), period: 'month' },
      { expiry: at8(2027, 2, 26), period: 'month' },
    ]);
  });

  it('follows the configured counts', () => {
    const only = (s: Partial<CatalogConfig['schedule']>) => ({ schedule: { dailies: 0, weeklies: 0, monthlies: 0, quarterlies: 0, ...s } });
    const now = Date.UTC(2026, 10, 22, 3, 0);
    assert.deepEqual(expirySchedule(only({ dailies: 3 }), now).map((e) => e.expiry), [at8(2026, 10, 22), at8(2026, 10, 23), at8(2026, 10, 24)]);
    assert.deepEqual(expirySchedule(only({ quarterlies: 4 }), now).map((e) => e.expiry), [
      at8(2026, 11, 25),
      at8(2027, 2, 26),
      at8(2027, 5, 25),
      at8(2027, 8, 24),
    ]);
    assert.deepEqual(expirySchedule(only({ monthlies: 1 }), Date.UTC(2026, 10, 28)), [{ expiry: at8(2026, 11, 25), period: 'month' }]);
  });

  // A reference implementation: walk day by day and classify each 08:00 instant.
  function referenceSchedule(nowMs: number, n: CatalogConfig['schedule']): ScheduledExpiry[] {
    const out: ScheduledExpiry[] = [];
    let days = 0;
    let fridays = 0;
    let monthEnds = 0;
    let quarterEnds = 0;
    const start = new Date(nowMs);
    for (let i = 0; i < 800; i++) {
      const t = at8(start.getUTCFullYear(), start.getUTCMonth(), start.getUTCDate() + i);
      if (t <= nowMs) continue;
      const d = new Date(t);
      const isFriday = d.getUTCDay() === 5;
      const isLastFriday = isFriday && new Date(t + 7 * DAY).getUTCMonth() !== d.getUTCMonth();
      const isQuarterEnd = isLastFriday && d.getUTCMonth() % 3 === 2;
      let period: ScheduledExpiry['period'] | null = null;
      if (days++ < n.dailies) period = 'day';
      if (isFriday && fridays++ < n.weeklies) period = 'week';
      if (isLastFriday && monthEnds++ < n.monthlies) period = 'month';
      if (isQuarterEnd && quarterEnds++ < n.quarterlies) period = 'month';
      if (period !== null) out.push({ expiry: t, period });
    }
    return out;
  }

  it('agrees with a day-by-day reference for any instant and counts', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2040, 0, 1) }),
        fc.record({
          dailies: fc.integer({ min: 0, max: 5 }),
          weeklies: fc.integer({ min: 0, max: 5 }),
          monthlies: fc.integer({ min: 0, max: 5 }),
          quarterlies: fc.integer({ min: 0, max: 5 }),
        }),
        (now, schedule) => {
          assert.deepEqual(expirySchedule({ schedule }, now), referenceSchedule(now, schedule));
        },
      ),
      { numRuns: 500 },
    );
    // the 08:00 boundary itself, where off-by-one errors live
    for (let d = 0; d < 60; d++) {
      const t = at8(2026, 10, 1) + d * DAY;
      for (const now of [t - 1, t, t + 1]) assert.deepEqual(expirySchedule(DEFAULTS, now), referenceSchedule(now, DEFAULTS.schedule));
    }
  });
});

describe('strikeGrid', () => {
  it('lists BTC at 100000 every 1000 within 80000..120000 and every 5000 out to 50000..200000', () => {
    const expected = [...range(50000, 75000, 5000), ...range(80000, 120000, 1000), ...range(125000, 200000, 5000)];
    const grid = strikeGrid(BTC, 100000);
    assert.deepEqual(grid, expected);
    assert.ok(grid.includes(100000));
    assert.equal(grid.length, 63);
  });

  it('lists ETH at 4000 every 50 within 3200..4800 and every 200 out to 2000..8000', () => {
    assert.deepEqual(strikeGrid(ETH, 4000), [...range(2000, 3000, 200), ...range(3200, 4800, 50), ...range(5000, 8000, 200)]);
  });

  it('keeps each band on its own step for an index between grid points', () => {
    // 87654.32: near band 70123.46..105185.18, whole grid 43827.16..175308.64, ATM-nearest 88000
    assert.deepEqual(strikeGrid(BTC, 87654.32), [...range(45000, 70000, 5000), ...range(71000, 105000, 1000), ...range(110000, 175000, 5000)]);
  });

  it('always includes the strike nearest the index, even when the bands hold none', () => {
    assert.deepEqual(strikeGrid(BTC, 1400), [1000]);
    assert.deepEqual(strikeGrid(BTC, 300), [1000]);
  });

  it('produces ascending integer strikes on their steps within 50%..200% of the index', () => {
    fc.assert(
      fc.property(fc.constantFrom<CurrencyCatalogConfig>(BTC, ETH), fc.double({ min: 1, max: 1e7, noNaN: true }), (cc, index) => {
        const grid = strikeGrid(cc, index);
        const { nearStep, farStep, nearPct } = cc.strikes;
        const atm = Math.max(nearStep, Math.round(index / nearStep) * nearStep);
        assert.ok(grid.includes(atm));
        for (let i = 0; i < grid.length; i++) {
          const k = grid[i];
          assert.ok(Number.isSafeInteger(k) && k > 0);
          if (i > 0) assert.ok(k > grid[i - 1]);
          if (k === atm) continue;
          assert.ok(k >= index * 0.5 * (1 - 1e-9) && k <= index * 2 * (1 + 1e-9), `${k} outside the grid for ${index}`);
          const near = Math.abs(k - index) <= nearPct * index * (1 + 1e-9);
          assert.equal(k % (near ? nearStep : farStep), 0, `${k} off its step for ${index}`);
        }
      }),
    );
  });

  it('rejects an index that is not a positive number', () => {
    assert.throws(() => strikeGrid(BTC, 0), RangeError);
    assert.throws(() => strikeGrid(BTC, NaN), RangeError);
  });
});

describe('listingsFor', () => {
  const now = Date.UTC(2026, 10, 22, 3, 0);
  const index = { BTC: 100000, ETH: 4000 };

  it('lists a call and a put per strike for every scheduled expiry on an empty exchange', () => {
    const specs = listingsFor(DEFAULTS, now, index, {});
    assert.equal(specs.length, 6 * 63 * 2 + 6 * 55 * 2);
    assert.deepEqual(specs[0], {
      currency: 'BTC',
      name: 'BTC-22NOV26-50000-C',
      optionType: 'call',
      strike: 50000,
      expiry: at8(2026, 10, 22),
      settlementPeriod: 'day',
    });
    assert.deepEqual(
      specs.slice(1, 4).map((s) => s.name),
      ['BTC-22NOV26-50000-P', 'BTC-22NOV26-55000-C', 'BTC-22NOV26-55000-P'],
    );
    assert.equal(specs[specs.length - 1].name, 'ETH-26MAR27-8000-P');
    assert.ok(specs.some((s) => s.name === 'BTC-27NOV26-100000-C' && s.settlementPeriod === 'month'));
    assert.ok(specs.some((s) => s.name === 'ETH-4DEC26-4000-P' && s.settlementPeriod === 'week'));
  });

  it('sorts by currency, expiry, strike and call before put whatever the config order', () => {
    const reversed = { ...DEFAULTS, currencies: [ETH, BTC] };
    const specs = listingsFor(reversed, now, index, {});
    assert.deepEqual(specs, listingsFor(DEFAULTS, now, index, {}));
    const key = (s: (typeof specs)[number]) => [s.currency, s.expiry, s.strike, s.optionType === 'call' ? 0 : 1] as const;
    for (let i = 1; i < specs.length; i++) {
      const a = key(specs[i - 1]);
      const b = key(specs[i]);
      const cmp = a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] - b[1] || a[2] - b[2] || a[3] - b[3];
      assert.ok(cmp < 0, `${specs[i - 1].name} before ${specs[i].name}`);
    }
  });

  it('names every instrument so that the name parses back to its fields', () => {
    for (const s of listingsFor(DEFAULTS, now, index, {})) {
      assert.deepEqual(parseInstrumentName(s.name), { currency: s.currency, expiry: s.expiry, strike: s.strike, optionType: s.optionType });
    }
  });

  it('lists only the expiry that appears when an old one expires', () => {
    const listed = expirySchedule(DEFAULTS, now).map((e) => e.expiry);
    assert.deepEqual(listingsFor(DEFAULTS, now, index, { BTC: listed, ETH: listed }), []);
    // at 08:00 on 22 Nov the 22NOV26 series expires and 24NOV26 enters the schedule
    const later = at8(2026, 10, 22);
    const specs = listingsFor(DEFAULTS, later, { BTC: 91234, ETH: 4321 }, { BTC: listed, ETH: listed });
    assert.deepEqual([...new Set(specs.map((s) => `${s.currency} ${s.expiry}`))], [`BTC ${at8(2026, 10, 24)}`, `ETH ${at8(2026, 10, 24)}`]);
    // the new series is struck around the index of the moment
    assert.deepEqual(
      specs.filter((s) => s.currency === 'BTC' && s.optionType === 'call').map((s) => s.strike),
      strikeGrid(BTC, 91234),
    );
  });

  it('lists per currency: a currency whose expiries are all listed gets nothing', () => {
    const listed = expirySchedule(DEFAULTS, now).map((e) => e.expiry);
    const specs = listingsFor(DEFAULTS, now, index, { BTC: listed });
    assert.ok(specs.length > 0);
    assert.ok(specs.every((s) => s.currency === 'ETH'));
  });

  it('throws when a currency that needs listings has no index price', () => {
    assert.throws(() => listingsFor(DEFAULTS, now, { BTC: 100000 }, {}), /no index price for ETH/);
  });

  it('is deterministic in its inputs', () => {
    assert.deepEqual(listingsFor(DEFAULTS, now, index, {}), listingsFor(clone(DEFAULTS), now, { ...index }, {}));
  });
});

test('a lot size that would make premiums fractional minor units is refused', async () => {
  const { parseCatalogConfig } = await import('../../src/market/catalog.ts');
  const good = JSON.parse(readFileSync(new URL('../../config/catalog.json', import.meta.url), 'utf8'));
  good.currencies[0].minTradeAmount = '0.00001';
  assert.throws(() => parseCatalogConfig(good), /minTradeAmount/);
  good.currencies[0].minTradeAmount = '0.0001';
  assert.doesNotThrow(() => parseCatalogConfig(good));
});
