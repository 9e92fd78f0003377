// The trader's own side of one instrument, beside its book: the position with its average price
// and P&L, and the open orders on it with Cancel. Orders show as `user.changes.{instrument}` tells of
// them; the panel also reloads then (a fill moves the position), and after a reconnect.
import { useState } from 'preact/hooks';
import * as fmt from '../lib/format.ts';
import { priv, useLiveOrders, useLoad, useReloadOn } from '../lib/live.ts';
import { errorText } from '../lib/rpc.ts';
import type { Order, Position } from '../lib/types.ts';

export function OwnPanel({ name }: { name: string }) {
  const n = useReloadOn([`user.changes.${name}.100ms`]);
  const { data, reload } = useLoad(() => Promise.all([priv<Position>('private/get_position', { instrument_name: name }).catch(() => null), priv<Order[]>('private/get_open_orders_by_instrument', { instrument_name: name })]), [name, n]);
  const [msg, setMsg] = useState<string | null>(null);
  const pos = data?.[0] ?? null;
  const orders = useLiveOrders(`user.changes.${name}.100ms`, data?.[1]) ?? [];
  const cancel = async (id: string) => {
    setMsg(null);
    try {
      await priv('private/cancel', { order_id: id });
      reload();
    } catch (e) {
      setMsg(errorText(e));
    }
  };
  const has = pos !== null && pos.size !== 0;
  return (
    <div class="panel" aria-label="Your position and orders" role="region">
      <h2>Your position and orders</h2>
      {has ? (
        <dl class="kv" data-own-position={pos.size}>
          <dt>Position</dt>
          <dd class={pos.size > 0 ? 'bid' : 'ask'}>{fmt.amount(pos.size)}</dd>
          <dt>Average price</dt>
          <dd>{fmt.price(pos.average_price)}</dd>
          <dt>Floating P&amp;L</dt>
          <dd data-field="floating_profit_loss">{fmt.coin(pos.floating_profit_loss)}</dd>
          <dt>Realized P&amp;L</dt>
          <dd>{fmt.coin(pos.realized_profit_loss)}</dd>
        </dl>
      ) : (
        <p class="muted">No position.</p>
      )}
      {orders.length === 0 ? (
        <p class="muted">No open orders here.</p>
      ) : (
        <table aria-label="Your open orders here">
          <thead>
            <tr>
              <th class="l">Side</th>
              <th>Price</th>
              <th>Amount</th>
              <th>Filled</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {orders.map((o) => (
              <tr key={o.order_id} data-order-id={o.order_id}>
                <td class={`l ${o.direction === 'buy' ? 'bid' : 'ask'}`}>{o.direction}</td>
                <td>{fmt.price(o.price)}</td>
                <td>{fmt.amount(o.amount)}</td>
                <td>{fmt.amount(o.filled_amount)}</td>
                <td>
                  <button type="button" onClick={() => void cancel(o.order_id)} aria-label={`Cancel order ${o.order_id}`}>
                    Cancel
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {msg && (
        <p class="error" role="alert">
          {msg}
        </p>
      )}
    </div>
  );
}
