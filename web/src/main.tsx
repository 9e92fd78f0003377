// Entry point: the stylesheet and the app shell.
import { render } from 'preact';
import './styles.css';
import { App } from './app.tsx';
import { applyTheme, savedTheme } from './lib/theme.ts';

// before the first render, so a light-theme user never sees a dark flash
applyTheme(savedTheme());

render(<App />, document.getElementById('app')!);
