// Counts SIMD dot-product instructions in a wasm module's code section: i32x4.dot_i16x8_s (0xFD 0xBA 0x01), which
// ggml-cpu's wasm SIMD kernels use in every quantized dot product and its generic C fallback (4x slower) never;
// i32x4.relaxed_dot_i8x16_i7x16_add_s (0xFD 0x93 0x02, opcode 0x113), the 8-bit one of the relaxed builds. A byte
// count, not a disassembly: a figure for the build's log, which data that looks alike can inflate (whether a build
// has relaxed SIMD at all, wasm/build.mjs asks WebAssembly.validate). Used by the build and a test.

/** @param {Uint8Array} wasm */
export function countSimdDots(wasm) {
  return countOpcode(wasm, [0xfd, 0xba, 0x01]);
}

/** @param {Uint8Array} wasm */
export function countRelaxedDots(wasm) {
  return countOpcode(wasm, [0xfd, 0x93, 0x02]);
}

/**
 * @param {Uint8Array} wasm
 * @param {[number, number, number]} opcode
 */
function countOpcode(wasm, [a, b, c]) {
  const code = codeSection(wasm);
  let n = 0;
  for (let i = code.start; i + 2 < code.end; i++) {
    if (wasm[i] === a && wasm[i + 1] === b && wasm[i + 2] === c) n++;
  }
  return n;
}

/** @param {Uint8Array} wasm */
function codeSection(wasm) {
  let p = 8; // magic + version
  while (p < wasm.length) {
    const id = wasm[p++];
    let size = 0;
    for (let shift = 0; ; shift += 7) {
      const b = wasm[p++];
      // Past the end (a truncated module): undefined would never end the size, and the loop would not stop.
      if (b === undefined) throw new Error('not a wasm module with a code section');
      size += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) break;
    }
    if (id === 10) return { start: p, end: p + size };
    p += size;
  }
  throw new Error('not a wasm module with a code section');
}

// A module with one function that returns the relaxed dot product of three zero vectors: whether this JavaScript engine
// has relaxed SIMD on. The build asks it of Node; the page (src/backends/llamacpp/worker/simd.ts) of the browser.
const v128Zero = [0xfd, 0x0c, ...new Array(16).fill(0)];
const body = [0x00, ...v128Zero, ...v128Zero, ...v128Zero, 0xfd, 0x93, 0x02, 0x0b];
export const RELAXED_PROBE = new Uint8Array([
  0x00,
  0x61,
  0x73,
  0x6d,
  0x01,
  0x00,
  0x00,
  0x00, // magic, version
  0x01,
  0x05,
  0x01,
  0x60,
  0x00,
  0x01,
  0x7b, // types: () -> v128
  0x03,
  0x02,
  0x01,
  0x00, // one function of that type
  0x0a,
  body.length + 2,
  0x01,
  body.length,
  ...body, // its code
]);
