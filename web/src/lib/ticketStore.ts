// What the order ticket holds, shared by the screens that fill it in: a click on a chain cell or a
// book level sets the instrument, side and price and opens the ticket.
import { useEffect, useState } from 'preact/hooks';

export interface TicketFill {
  instrument: string;
  side: 'buy' | 'sell';
  price: number | null;
  amount?: number;
}

interface TicketState {
  open: boolean;
  fill: TicketFill | null;
  /** Grows with every fill, so the ticket resets its inputs even when the same values come again. */
  version: number;
}

let state: TicketState = { open: false, fill: null, version: 0 };
const listeners = new Set<(s: TicketState) => void>();

function set(s: TicketState): void {
  state = s;
  for (const l of listeners) l(s);
}

export function fillTicket(fill: TicketFill): void {
  set({ open: true, fill, version: state.version + 1 });
}

export function closeTicket(): void {
  set({ ...state, open: false });
}

export function useTicket(): TicketState {
  const [s, setS] = useState(state);
  useEffect(() => {
    listeners.add(setS);
    return () => void listeners.delete(setS);
  }, []);
  return s;
}
