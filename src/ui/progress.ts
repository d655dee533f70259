import type { Progress } from '../types.ts';

const WHAT: Record<Progress['phase'], string> = {
  download: 'Downloading the model', verify: 'Checking the download', load: 'Loading the model',
  restore: 'Restoring the conversation', prefill: 'Reading the conversation',
};

const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;

/** A progress event as a person reads it: "Downloading the model: 12.3 MB of 400.0 MB (11.8 MB/s)". */
export function describeProgress(p: Progress): string {
  const amount = p.phase === 'prefill' ? `${p.loaded} of ${p.total} tokens` : `${mb(p.loaded)}${p.total ? ` of ${mb(p.total)}` : ''}`;
  const speed = p.phase === 'download' && p.bytesPerSecond ? ` (${mb(p.bytesPerSecond)}/s)` : '';
  return `${WHAT[p.phase]}: ${amount}${speed}`;
}
