// The engine's per-piece work figures leave out GC pauses that fell inside a piece (src/app/gcPauses.ts,
// src/app/metrics.ts `work`): a 5 ms piece holding a 4 ms scavenge counts as 1 ms of work, and the
// 4 ms are counted beside it; a piece without GC counts in full.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gcWithin, recordGcPause } from '../../src/app/gcPauses.ts';
import { createMetrics } from '../../src/app/metrics.ts';
import { Exchange } from '../../src/engine/exchange.ts';

function metrics() {
  return createMetrics({ ex: new Exchange(), wsConnections: () => 0, snapshots: () => ({ inline: 0, background: 0, failed: 0 }) });
}

/** The cumulative count of a work histogram's bucket, or of a counter, from the exposition. */
function value(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));
  assert.ok(line !== undefined, `${name} {${labels}} is exposed`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('engine work and GC pauses', () => {
  it('adds up only the part of a logged pause inside an interval', () => {
    recordGcPause(1_000_000, 1_000_004);
    assert.equal(gcWithin(1_000_002, 1_000_010), 2);
    assert.equal(gcWithin(1_000_010, 1_000_020), 0);
    assert.equal(gcWithin(999_990, 1_000_010), 4);
  });

  it('counts a piece without the GC pause inside it, and the pause beside it', async () => {
    const m = metrics();
    const now = performance.now();
    recordGcPause(now - 4.5, now - 0.5);
    m.work('market_tick', 0.005);
    const text = await m.text();
    // ~1 ms of its own
    assert.equal(value(text, 'strikebook_engine_work_seconds_bucket', 'work="market_tick",le="0.002"'), 1);
    assert.ok(Math.abs(value(text, 'strikebook_engine_work_gc_seconds_total', 'work="market_tick"') - 0.004) < 0.0005);
    assert.equal(value(text, 'strikebook_engine_work_pieces_with_gc_total', 'work="market_tick"'), 1);
  });

  it('counts a piece with no pause in its time in full', async () => {
    const m = metrics();
    const now = performance.now();
    recordGcPause(now - 100, now - 90); // well before the piece
    m.work('liquidation_scan_slice', 0.005);
    const text = await m.text();
    assert.equal(value(text, 'strikebook_engine_work_seconds_bucket', 'work="liquidation_scan_slice",le="0.002"'), 0);
    assert.equal(value(text, 'strikebook_engine_work_seconds_count', 'work="liquidation_scan_slice"'), 1);
  });
});
