// Fill and liquidation notifications: every trade of the signed-in user (`user.trades.any.any`)
// shows for a few seconds in the corner, whichever screen is open. Silent: the app plays no sound.
import { useRef, useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { useChannel, useSession } from '../lib/live.ts';
import type { UserTrade } from '../lib/types.ts';

const SHOW_MS = 6000;
/** At most this many at once: a sweep of many fills shows its newest. */
const MAX_SHOWN = 4;

interface Toast {
  id: string;
  text: string;
  liquidation: boolean;
}

export function Toasts() {
  const s = useSession();
  const [shown, setShown] = useState<Toast[]>([]);
  const timers = useRef(new Map<string, ReturnType<typeof setTimeout>>());
  useChannel(s ? 'user.trades.any.any.100ms' : null, (d) => {
    const fresh = (d as (UserTrade & { liquidation?: string })[]).map((t) => ({
      id: t.trade_id,
      liquidation: Boolean(t.liquidation),
      text: `${t.liquidation ? 'Liquidation' : 'Filled'}: ${t.direction} ${fmt.amount(t.amount)} ${t.instrument_name} at ${fmt.price(t.price)}${t.liquidity === 'M' ? ' (maker)' : t.liquidity === 'T' ? ' (taker)' : ''}`,
    }));
    setShown((prev) => [...prev, ...fresh].slice(-MAX_SHOWN));
    for (const f of fresh) {
      timers.current.set(
        f.id,
        setTimeout(() => {
          timers.current.delete(f.id);
          setShown((prev) => prev.filter((x) => x.id !== f.id));
        }, SHOW_MS),
      );
    }
  });
  if (shown.length === 0) return null;
  return (
    <div class="toasts" role="status" aria-label="Notifications">
      {shown.map((t) => (
        <p key={t.id} class={`toast-item${t.liquidation ? ' liquidation' : ''}`} data-trade-id={t.id}>
          {t.text}
        </p>
      ))}
    </div>
  );
}
