// Progress as the app and the widget show it: a bar and a line of text.
import { formatBytes } from '../core/bytes.ts';
import type { Progress } from '../types.ts';

const WHAT: Record<Progress['phase'], string> = {
  download: 'Downloading the model',
  verify: 'Checking the download',
  load: 'Loading the model',
  restore: 'Restoring the conversation',
  prefill: 'Reading the conversation',
};

/** The prompt state file's phases (LoadOptions.promptState). */
const STATE: Partial<Record<Progress['phase'], string>> = {
  download: 'Downloading the prompt state',
  verify: 'Checking the prompt state',
  restore: 'Reading the prompt state',
};

/** A progress event as a person reads it: "Downloading the model: 11.7 MiB of 381.5 MiB (11.2 MiB/s, 33 s left)". */
export function describeProgress(p: Progress): string {
  const amount =
    p.phase === 'prefill'
      ? `${p.loaded} of ${p.total} tokens`
      : `${formatBytes(p.loaded)}${p.total ? ` of ${formatBytes(p.total)}` : ''}`;
  const left = p.total && p.bytesPerSecond ? `, ${timeLeft((p.total - p.loaded) / p.bytesPerSecond)} left` : '';
  const speed = p.phase === 'download' && p.bytesPerSecond ? ` (${formatBytes(p.bytesPerSecond)}/s${left})` : '';
  const what = (p.file === 'prompt-state' ? STATE[p.phase] : undefined) ?? WHAT[p.phase];
  return `${what}: ${amount}${speed}`;
}

/** Shows a progress event on the bar; returns its text, for the status line. */
export function showProgress(bar: HTMLProgressElement, p: Progress): string {
  bar.hidden = false;
  bar.value = p.total ? p.loaded / p.total : 0;
  return describeProgress(p);
}

/** Seconds as a person reads them: "40 s", "3 min", "1 h 5 min". */
export function timeLeft(seconds: number): string {
  const s = Math.max(1, Math.round(seconds));
  if (s < 90) return `${s} s`;
  const min = Math.round(s / 60);
  return min < 60 ? `${min} min` : `${Math.floor(min / 60)} h ${min % 60} min`;
}
