// One thread of the speed probe (device.ts): reads a 32 MiB array again and again for `ms` milliseconds, as a decode
// step reads the weights, and answers how many bytes a second it read. Summing 32-bit integers four at a time is about
// the work a quantized dot product does per byte in the engine's SIMD kernels.
const WORDS = 8 * 1024 * 1024;

self.onmessage = (e: MessageEvent<{ ms: number }>) => {
  const data = new Int32Array(WORDS);
  for (let i = 0; i < WORDS; i++) data[i] = i & 0xff;
  let bytes = 0;
  let sum = 0;
  const t0 = performance.now();
  while (performance.now() - t0 < e.data.ms) {
    let a = 0;
    let b = 0;
    let c = 0;
    let d = 0;
    for (let i = 0; i < WORDS; i += 4) {
      a = (a + data[i]!) | 0;
      b = (b + data[i + 1]!) | 0;
      c = (c + data[i + 2]!) | 0;
      d = (d + data[i + 3]!) | 0;
    }
    sum ^= a ^ b ^ c ^ d;
    bytes += WORDS * 4;
  }
  const seconds = (performance.now() - t0) / 1000;
  // The sum goes back too: a loop whose result is unused could be optimised away.
  self.postMessage({ bytesPerSecond: bytes / seconds, sum });
};
