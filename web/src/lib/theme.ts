// Dark (the default) or light theme: a data-theme attribute on <html> that styles.css keys its
// colours on, remembered in localStorage (a display preference, not a secret: it may outlive the tab).
import { useState } from 'preact/hooks';

export type Theme = 'dark' | 'light';
const KEY = 'strikebook.theme';

export function savedTheme(): Theme {
  try {
    return localStorage.getItem(KEY) === 'light' ? 'light' : 'dark';
  } catch {
    return 'dark';
  }
}

export function applyTheme(t: Theme): void {
  document.documentElement.dataset.theme = t;
}

/** A colour of the theme in force, for what CSS cannot reach (the chart's canvas). */
export function themeColor(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export function useTheme(): [Theme, () => void] {
  const [t, set] = useState<Theme>(savedTheme());
  const toggle = () => {
    const next: Theme = t === 'dark' ? 'light' : 'dark';
    try {
      localStorage.setItem(KEY, next);
    } catch {
      // storage refused (private mode): the choice lasts for this page only
    }
    applyTheme(next);
    set(next);
  };
  return [t, toggle];
}
