// The conservation streams of the last two default seeds (conservation.test.ts has the first two and
// says what the streams check; the stream itself is in conservation/): a file of its own, so that
// test:all runs it on the other core. The last seed runs with small limits.
import { describe, it } from 'node:test';
import { itStream } from './conservation/stream.ts';
import { MORE_SEEDS, SEED_OVERRIDE } from './conservation/streamParams.ts';

describe('random command streams', () => {
  if (SEED_OVERRIDE !== null) {
    // STRIKEBOOK_PROP_SEED runs only that seed, in conservation.test.ts: say so rather than pass silently
    it(`seeds ${MORE_SEEDS.join(' and ')}`, { skip: `STRIKEBOOK_PROP_SEED=${SEED_OVERRIDE} runs only that seed, in conservation.test.ts` }, () => {});
  } else {
    MORE_SEEDS.forEach((seed, i) => itStream(seed, i === MORE_SEEDS.length - 1));
  }
});
