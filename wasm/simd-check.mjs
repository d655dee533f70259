// Counts i32x4.dot_i16x8_s (opcode 0xFD 0xBA 0x01) in a wasm module's code section. ggml-cpu's wasm SIMD kernels
// use it in every quantized dot product; its generic C fallback (4x slower) has none. Used by the build and a test.

/** @param {Uint8Array} wasm */
export function countSimdDots(wasm) {
  const code = codeSection(wasm);
  let n = 0;
  for (let i = code.start; i + 2 < code.end; i++) {
    if (wasm[i] === 0xfd && wasm[i + 1] === 0xba && wasm[i + 2] === 0x01) n++;
  }
  return n;
}

function codeSection(wasm) {
  let p = 8; // magic + version
  while (p < wasm.length) {
    const id = wasm[p++];
    let size = 0;
    for (let shift = 0; ; shift += 7) {
      const b = wasm[p++];
      size += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) break;
    }
    if (id === 10) return { start: p, end: p + size };
    p += size;
  }
  throw new Error('not a wasm module with a code section');
}
