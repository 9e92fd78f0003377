// Fill and liquidation notifications: every trade of the signed-in user (`user.trades.any.any`)
// shows for a few seconds in the corner, whichever screen is open, with a short beep when the
// trader turned sound on (lib/sound.ts; off by default). A trade shows as a liquidation when the
// user's own side of it was the liquidation order (`liquidation` names the sides: M, T or MT), not
// when the user's resting order met someone else's liquidation.
import { useRef, useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { useChannel, useSession } from '../lib/live.ts';
import type { UserTrade } from '../lib/types.ts';
import { beep } from '../lib/sound.ts';

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
    const fresh = (d as (UserTrade & { liquidation?: string })[]).map((t) => {
      const liquidation = Boolean(t.liquidation && t.liquidity && t.liquidation.includes(t.liquidity));
      return {
        id: t.trade_id,
        liquidation,
        text: `${liquidation ? 'Liquidation' : 'Filled'}: ${t.direction} ${fmt.amount(t.amount)} ${t.instrument_name} at ${fmt.price(t.price)}${t.liquidity === 'M' ? ' (maker)' : t.liquidity === 'T' ? ' (taker)' : ''}`,
      };
    });
    if (fresh.length > 0) beep(fresh.some((f) => f.liquidation) ? 'liquidation' : 'fill');
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
