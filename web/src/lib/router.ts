// Client-side routes on the History API. The server answers each route with index.html
// (src/api/http/webApp.ts APP_ROUTES), so a reload or a shared link lands on the same screen.
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false): void {
  if (to === location.pathname + location.search) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const l of listeners) l();
}

addEventListener('popstate', () => {
  for (const l of listeners) l();
});

export interface Route {
  path: string;
  query: URLSearchParams;
}

export function useRoute(): Route {
  const [, tick] = useState(0);
  useEffect(() => {
    const l = () => tick((n) => n + 1);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

/** An <a> that navigates without a page load. */
export function linkClick(e: MouseEvent, to: string): void {
  if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  navigate(to);
}
