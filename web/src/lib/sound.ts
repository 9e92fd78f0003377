// A short beep on fills, off by default: a toggle in the header, remembered in localStorage (a
// display preference like the theme). The beep is a WebAudio oscillator: no audio file and no data:
// URL, so the Content-Security-Policy (default-src 'self') has nothing to allow.
import { useState } from 'preact/hooks';

const KEY = 'strikebook.sound';

export function soundOn(): boolean {
  try {
    return localStorage.getItem(KEY) === 'on';
  } catch {
    return false;
  }
}

let ctx: AudioContext | null = null;

function audio(): AudioContext | null {
  if (ctx) return ctx;
  const Ctor = typeof AudioContext === 'function' ? AudioContext : null;
  if (!Ctor) return null;
  try {
    ctx = new Ctor();
  } catch {
    ctx = null;
  }
  return ctx;
}

/** One short beep (a liquidation's lower), when the setting is on; nothing otherwise. */
export function beep(kind: 'fill' | 'liquidation' = 'fill'): void {
  if (!soundOn()) return;
  const a = audio();
  if (!a) return;
  // a context made before any click starts suspended (autoplay policy); the toggle's click resumes it
  if (a.state === 'suspended') void a.resume().catch(() => undefined);
  const osc = a.createOscillator();
  const gain = a.createGain();
  osc.type = 'sine';
  osc.frequency.value = kind === 'liquidation' ? 440 : 880;
  gain.gain.value = 0.08;
  osc.connect(gain);
  gain.connect(a.destination);
  const t = a.currentTime;
  osc.start(t);
  osc.stop(t + 0.12);
}

export function useSound(): [boolean, () => void] {
  const [on, set] = useState<boolean>(soundOn());
  const toggle = () => {
    const next = !on;
    try {
      localStorage.setItem(KEY, next ? 'on' : 'off');
    } catch {
      // storage refused (private mode): the choice lasts for this page only
    }
    // made (or resumed) inside the click: a browser lets a page start audio only after a gesture
    if (next) void audio()?.resume().catch(() => undefined);
    set(next);
  };
  return [on, toggle];
}
