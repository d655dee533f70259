/** A size as people read it, in binary units: "381.5 MiB", "1.27 GiB". One format for errors, progress and lists. */
export function formatBytes(n: number): string {
  return n >= 1024 ** 3 ? `${(n / 1024 ** 3).toFixed(2)} GiB` : `${(n / 1024 ** 2).toFixed(1)} MiB`;
}
