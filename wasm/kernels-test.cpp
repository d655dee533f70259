// Checks Hearth's kernels (wasm/patches) against ggml's own code, on random data of the shapes real models have:
// - Q8_0 four-rows-per-call dot products;
// - GEMV and GEMM over weights repacked four rows at a time against the row-at-a-time dot product: Q8_0 and Q4_0 (eight
//   bytes at a time in the plain builds, four in the relaxed ones), and in the relaxed builds IQ4_NL, Q5_0 and Q5_1;
// - in the relaxed builds, GEMV and GEMM over Q4_K, Q5_K, Q6_K and IQ4_XS weights as ggml's repacking buffer lays them
//   out (eight rows at a time) against ggml's scalar dot product;
// - the Q4_0, Q4_K, Q5_0, Q5_1, Q5_K, Q6_K, IQ4_NL and IQ4_XS dot products against ggml's scalar reference;
// - the activation quantizers (Q8_0, Q8_1 rows; the GEMM's four-row Q8_0 and Q8_K ones) against ggml's reference.
// The relaxed builds' kernels run both ways (products summed in int16, or one relaxed dot product at a time; see
// arch/wasm/relaxed.h), whichever this CPU picked. Built with both single-thread wasm builds (wasm/build.mjs): the plain
// one is run in Node by test/kernels.test.ts, the relaxed-SIMD one in Chromium and Firefox by e2e/kernels.spec.ts
// (Node 20's V8 computes the relaxed dot product wrongly). Prints one JSON object.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#define GGML_COMMON_DECL_CPP
#include "ggml-common.h"
#include "quants.h"
#include "repack.h"
#if defined(__wasm_relaxed_simd__)
#include "arch/wasm/relaxed.h"
// The relaxed kernels have two paths (relaxed.h): every check runs with both, whichever this CPU picked.
static const int DOT_MODES[] = {0, 1};
static void set_dot_mode(int mode) { hearth_dot16 = mode; }
#else
static const int DOT_MODES[] = {0};
static void set_dot_mode(int) {}
#endif

extern "C" void quantize_row_q8_0(const float * x, void * y, int64_t k);
extern "C" void quantize_row_q8_1(const float * x, void * y, int64_t k);
extern "C" void quantize_row_q8_K(const float * x, void * y, int64_t k);

static std::mt19937 rng(1234);

static std::vector<block_q8_0> random_rows(int rows, int n, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> f(n);
  std::vector<block_q8_0> q((size_t) rows * n / QK8_0);
  for (int r = 0; r < rows; r++) {
    for (auto & v : f) v = dist(rng);
    quantize_row_q8_0(f.data(), &q[(size_t) r * n / QK8_0], n);
  }
  return q;
}

// Four rows interleaved `chunk` bytes at a time, as ggml's repack (make_block_q8_0x4, make_block_q4_0x4: 8;
// make_block_iq4_nlx4: 4) lays them out; Q4_0's nibbles get their top bit flipped there (XOR 0x88), which makes them
// signed.
template <typename X4, int chunk, typename B>
static std::vector<X4> interleave(const std::vector<B> & q, int rows, int nb, uint8_t flip = 0) {
  constexpr int chunks = sizeof(B::qs) / chunk * 4;
  std::vector<X4> out((size_t) rows / 4 * nb);
  for (int g = 0; g < rows / 4; g++) {
    for (int l = 0; l < nb; l++) {
      X4 & o = out[(size_t) g * nb + l];
      for (int i = 0; i < 4; i++) o.d[i] = q[(size_t) (g * 4 + i) * nb + l].d;
      for (int i = 0; i < chunks; i++) {
        const uint8_t * from = (const uint8_t *) &q[(size_t) (g * 4 + i % 4) * nb + l].qs[(i / 4) * chunk];
        for (int k = 0; k < chunk; k++) ((uint8_t *) o.qs)[i * chunk + k] = from[k] ^ flip;
      }
    }
  }
  return out;
}

template <typename X4, int chunk>
static auto packer(uint8_t flip) {
  return [flip](const auto & x, int rows, int nb) { return interleave<X4, chunk>(x, rows, nb, flip); };
}

static void q5_scales(block_q5_0x4 & o, const block_q5_0 & in, int i) { o.d[i] = in.d; }
static void q5_scales(block_q5_1x4 & o, const block_q5_1 & in, int i) {
  o.d[i] = in.GGML_COMMON_AGGR_U.GGML_COMMON_AGGR_S.d;
  o.m[i] = in.GGML_COMMON_AGGR_U.GGML_COMMON_AGGR_S.m;
}

// Four Q5_0 or Q5_1 rows as repack.h's block_q5_0x4/block_q5_1x4 lay them out: nibbles four bytes at a time; byte
// 4r + j of qh holds in bit k the fifth bit of row r's element 4k + j.
template <typename X4, typename B>
static std::vector<X4> pack_q5(const std::vector<B> & q, int rows, int nb) {
  std::vector<X4> out((size_t) rows / 4 * nb);
  for (int g = 0; g < rows / 4; g++) {
    for (int l = 0; l < nb; l++) {
      X4 & o = out[(size_t) g * nb + l];
      for (int r = 0; r < 4; r++) {
        const B & in = q[(size_t) (g * 4 + r) * nb + l];
        q5_scales(o, in, r);
        uint32_t qh;
        memcpy(&qh, in.qh, 4);
        for (int j = 0; j < 4; j++) {
          o.qh[4 * r + j] = 0;
          for (int k = 0; k < 8; k++) o.qh[4 * r + j] |= ((qh >> (4 * k + j)) & 1) << k;
        }
        for (int k = 0; k < 4; k++) memcpy(o.qs + 16 * k + 4 * r, in.qs + 4 * k, 4);
      }
    }
  }
  return out;
}

typedef void (*vec_dot_fn)(int, float *, size_t, const void *, size_t, const void *, size_t, int);
typedef void (*gemm_fn)(int, float *, size_t, const void *, const void *, int, int);

// Q5_1 weights against Q8_0 activations (ggml pairs Q5_1 with Q8_1, whose sum it stores in f16), in double:
// sum over blocks of d_w d_y sum(code y) + m_w d_y sum(y).
static void q5_1_q8_0_reference(int n, float * s, size_t, const void * vx, size_t, const void * vy, size_t, int) {
  const block_q5_1 * x = (const block_q5_1 *) vx;
  const block_q8_0 * y = (const block_q8_0 *) vy;
  double sum = 0;
  for (int b = 0; b < n / QK5_1; b++) {
    uint32_t qh;
    memcpy(&qh, x[b].qh, 4);
    int codes = 0, ys = 0;
    for (int j = 0; j < 16; j++) {
      codes += ((x[b].qs[j] & 0xF) | ((qh >> j) & 1) << 4) * y[b].qs[j] + ((x[b].qs[j] >> 4) | ((qh >> (j + 16)) & 1) << 4) * y[b].qs[j + 16];
      ys += y[b].qs[j] + y[b].qs[j + 16];
    }
    const double dy = ggml_fp16_to_fp32(y[b].d);
    sum += ggml_fp16_to_fp32(x[b].GGML_COMMON_AGGR_U.GGML_COMMON_AGGR_S.d) * dy * codes +
           ggml_fp16_to_fp32(x[b].GGML_COMMON_AGGR_U.GGML_COMMON_AGGR_S.m) * dy * ys;
  }
  *s = (float) sum;
}

struct RepackedErrors {
  int cases = 0;
  double gemv_max_rel = 0, gemm_max_rel = 0;

  // One case: `got` holds GEMV's results, then `run_gemm` puts GEMM's there; each against its reference, relative to
  // the largest of GEMV's reference values.
  template <typename RunGemm>
  void add(std::vector<float> & got, const std::vector<float> & gemv_ref, const std::vector<float> & gemm_ref, RunGemm run_gemm) {
    double scale = 0;
    for (float v : gemv_ref) scale = std::fmax(scale, std::fabs(v));
    for (size_t i = 0; i < got.size(); i++) gemv_max_rel = std::fmax(gemv_max_rel, std::fabs(got[i] - gemv_ref[i]) / scale);
    run_gemm();
    for (size_t i = 0; i < got.size(); i++) gemm_max_rel = std::fmax(gemm_max_rel, std::fabs(got[i] - gemm_ref[i]) / scale);
    cases++;
  }
};

// GEMV and GEMM over `weights(rows, n)` repacked four rows at a time by `pack(x, rows, nb)` (X4, `chunk` bytes at a
// time; the activations of GEMM interleaved alike) against the
// row-at-a-time dot product `reference`, on the shapes real models have; errors relative to the largest result.
// `also(x, y, m, ref)` checks more against each activation row's reference results.
template <typename X4, int chunk, typename Weights, typename Pack, typename Also>
static RepackedErrors repacked_max_rel(Weights weights, Pack pack, vec_dot_fn reference, gemm_fn gemv, gemm_fn gemm,
                                       Also also) {
  RepackedErrors e;
  for (int mode : DOT_MODES) {
  set_dot_mode(mode);
  for (int n : {64, 896, 4864}) {
    for (int rows : {4, 12, 20}) {
      const int nb = n / QK8_0;
      const auto x = weights(rows, n);
      const std::vector<X4> xp = pack(x, rows, nb);
      for (int ny : {4, 8}) {
        const auto y = random_rows(ny, n, 3.0f);
        const auto yp = interleave<block_q8_0x4, chunk>(y, ny, nb);
        std::vector<float> ref((size_t) ny * rows), got((size_t) ny * rows);
        for (int m = 0; m < ny; m++) {
          for (int r = 0; r < rows; r++) {
            reference(n, &ref[(size_t) m * rows + r], 0, &x[(size_t) r * nb], 0, &y[(size_t) m * nb], 0, 1);
          }
          also(x, y, m, &ref[(size_t) m * rows], rows, n);
          gemv(n, &got[(size_t) m * rows], rows, xp.data(), &y[(size_t) m * nb], 1, rows);
        }
        e.add(got, ref, ref, [&] { gemm(n, got.data(), rows, xp.data(), yp.data(), ny, rows); });
      }
    }
  }
  }
  return e;
}

// Weights as a model's file holds them: quantized with ggml's reference quantizer.
template <typename B, ggml_type type>
static std::vector<B> quantized_rows(int rows, int n) {
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  std::vector<float> f((size_t) rows * n);
  for (auto & v : f) v = dist(rng);
  std::vector<B> x((size_t) rows * n / 32);
  ggml_get_type_traits(type)->from_float_ref(f.data(), x.data(), (int64_t) rows * n);
  return x;
}

// Largest |ours - ggml's scalar reference| for weights of type `tx` over random rows, relative to |a|·|b| (a dot
// product's natural scale; an error relative to the result itself blows up where the result is near zero).
static double dot_max_rel(ggml_type tx, vec_dot_fn reference) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto * cpu = ggml_get_type_traits_cpu(tx);
  const ggml_type ty = cpu->vec_dot_type;
  double worst = 0;
  for (int mode : DOT_MODES) {
  set_dot_mode(mode);
  for (int n : {256, 1024, 4864}) {
    std::vector<float> a(n), b(n);
    std::vector<uint8_t> qa(ggml_row_size(tx, n)), qb(ggml_row_size(ty, n));
    for (int rep = 0; rep < 8; rep++) {
      double na = 0, nb = 0;
      for (auto & v : a) { v = dist(rng); na += v * v; }
      for (auto & v : b) { v = 3 * dist(rng); nb += v * v; }
      ggml_get_type_traits(tx)->from_float_ref(a.data(), qa.data(), n);
      ggml_get_type_traits_cpu(ty)->from_float(b.data(), qb.data(), n); // Q8_K has no reference quantizer
      float got, ref;
      cpu->vec_dot(n, &got, 0, qa.data(), 0, qb.data(), 0, 1);
      reference(n, &ref, 0, qa.data(), 0, qb.data(), 0, 1);
      worst = std::fmax(worst, std::fabs(got - ref) / std::sqrt(na * nb));
    }
  }
  }
  return worst;
}

// `rows` rows of `type` as this build's repacking buffer lays them out (ggml's own repack code, Hearth's where it added
// one); empty when the build does not repack the type.
static std::vector<uint8_t> ggml_repacked(ggml_type type, int rows, int n, const void * data) {
  ggml_init_params ip = { ggml_tensor_overhead(), nullptr, true };
  ggml_context * ctx = ggml_init(ip);
  ggml_tensor * w = ggml_new_tensor_2d(ctx, type, n, rows);
  ggml_backend_buffer_type_t buft = ggml_backend_cpu_repack_buffer_type();
  ggml_backend_buffer_t buf = ggml_backend_buft_alloc_buffer(buft, ggml_backend_buft_get_alloc_size(buft, w));
  ggml_backend_tensor_alloc(buf, w, ggml_backend_buffer_get_base(buf));
  std::vector<uint8_t> out;
  if (w->extra) {
    ggml_backend_tensor_set(w, data, 0, ggml_nbytes(w));
    out.assign((const uint8_t *) w->data, (const uint8_t *) w->data + ggml_nbytes(w));
  }
  ggml_backend_buffer_free(buf);
  ggml_free(ctx);
  return out;
}

// K-quant and IQ4_XS weights repacked eight rows at a time (ggml's repack), GEMV and GEMM against ggml's scalar dot
// product of each row with each activation row: GEMV's activations from quantize_row_q8_K, GEMM's from
// ggml_quantize_mat_q8_K_4x4 (rows interleaved four bytes at a time), read back into rows for the reference. Errors
// relative to the largest result; cases = 0 where the build does not repack the type.
static RepackedErrors k_repacked_max_rel(ggml_type type, vec_dot_fn reference, gemm_fn gemv, gemm_fn gemm) {
  RepackedErrors e;
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int mode : DOT_MODES) {
  set_dot_mode(mode);
  for (int n : {256, 4864}) {
    for (int rows : {8, 24}) {
      const size_t row_bytes = ggml_row_size(type, n);
      std::vector<float> f((size_t) rows * n);
      for (auto & v : f) v = 0.5f * dist(rng);
      std::vector<uint8_t> x(row_bytes * rows);
      ggml_get_type_traits(type)->from_float_ref(f.data(), x.data(), (int64_t) rows * n);
      const std::vector<uint8_t> xp = ggml_repacked(type, rows, n, x.data());
      if (xp.empty()) return e;
      const int nb = n / QK_K;
      for (int ny : {4, 8}) {
        std::vector<float> act((size_t) ny * n);
        for (auto & v : act) v = 3 * dist(rng);
        std::vector<block_q8_K> y((size_t) ny * nb), yr((size_t) ny * nb);
        for (int m = 0; m < ny; m++) quantize_row_q8_K(&act[(size_t) m * n], &y[(size_t) m * nb], n);
        std::vector<block_q8_Kx4> yp((size_t) ny / 4 * nb);
        for (int g = 0; g < ny / 4; g++) ggml_quantize_mat_q8_K_4x4(&act[(size_t) g * 4 * n], &yp[(size_t) g * nb], n);
        for (int m = 0; m < ny; m++) {
          for (int l = 0; l < nb; l++) {
            const block_q8_Kx4 & in = yp[(size_t) (m / 4) * nb + l];
            block_q8_K & out = yr[(size_t) m * nb + l];
            out.d = in.d[m % 4];
            for (int i = 0; i < QK_K; i++) out.qs[i] = in.qs[(i / 4) * 16 + 4 * (m % 4) + i % 4];
            for (int g = 0; g < QK_K / 16; g++) {
              int sum = 0;
              for (int i = 0; i < 16; i++) sum += out.qs[16 * g + i];
              out.bsums[g] = (int16_t) sum;
            }
          }
        }
        std::vector<float> ref_v((size_t) ny * rows), ref_m((size_t) ny * rows), got((size_t) ny * rows);
        for (int m = 0; m < ny; m++) {
          for (int r = 0; r < rows; r++) {
            reference(n, &ref_v[(size_t) m * rows + r], 0, &x[r * row_bytes], 0, &y[(size_t) m * nb], 0, 1);
            reference(n, &ref_m[(size_t) m * rows + r], 0, &x[r * row_bytes], 0, &yr[(size_t) m * nb], 0, 1);
          }
          gemv(n, &got[(size_t) m * rows], rows, xp.data(), &y[(size_t) m * nb], 1, rows);
        }
        e.add(got, ref_v, ref_m, [&] { gemm(n, got.data(), rows, xp.data(), yp.data(), ny, rows); });
      }
    }
  }
  }
  return e;
}

// Activation values (the int8 codes) where the SIMD quantizer `q8` and ggml's reference quantizer disagree, over rows
// of typical activations: both round to nearest (upstream's wasm code truncated). Exact ties are not counted: the
// SIMD code rounds them to even, as x86's does; the reference, away from zero.
template <typename B>
static int quantize_mismatches(void (*q8)(const float *, void *, int64_t), ggml_type type) {
  std::normal_distribution<float> dist(0.0f, 2.0f);
  const int n = 4864;
  std::vector<float> f(n);
  std::vector<B> got(n / 32), ref(n / 32);
  int mismatches = 0;
  for (int rep = 0; rep < 16; rep++) {
    for (auto & v : f) v = dist(rng);
    q8(f.data(), got.data(), n);
    ggml_get_type_traits(type)->from_float_ref(f.data(), ref.data(), n);
    for (int b = 0; b < n / 32; b++) {
      float amax = 0;
      for (int i = 0; i < 32; i++) amax = std::fmax(amax, std::fabs(f[b * 32 + i]));
      const float d = amax / 127, id = d ? 1.0f / d : 0.0f;
      for (int i = 0; i < 32; i++) {
        const float v = std::fabs(f[b * 32 + i] * id);
        mismatches += got[b].qs[i] != ref[b].qs[i] && v - std::floor(v) != 0.5f;
      }
    }
  }
  return mismatches;
}

// The GEMM activation quantizers (wasm SIMD in every build) against ggml's generic ones, on four rows whose every
// block of 32 has 127 c as its largest value and the others k c + u c (|u| <= 0.4, c a power of two): no value falls on
// a tie, where the two round differently (see above), so scales, codes and Q8_K's sums of 16 must be equal. Returns the
// count of differing results.
template <typename B>
static int mat_quantize_mismatches(void (*ours)(const float *, void *, int64_t), void (*ref)(const float *, void *, int64_t)) {
  const int n = 4608; // 144 blocks of 32, 18 super-blocks of 256
  std::uniform_int_distribution<int> code(-126, 126);
  std::uniform_real_distribution<float> off(-0.4f, 0.4f);
  std::vector<float> f((size_t) 4 * n);
  const int nb = n / (int) (sizeof(B::qs) / 4);
  std::vector<B> got(nb), want(nb);
  int mismatches = 0;
  for (int rep = 0; rep < 8; rep++) {
    const float c = std::ldexp(1.0f, -rep);
    for (size_t i = 0; i < f.size(); i++) f[i] = i % 32 == 0 ? 127 * c : (code(rng) + off(rng)) * c;
    ours(f.data(), got.data(), n);
    ref(f.data(), want.data(), n);
    mismatches += memcmp(got.data(), want.data(), nb * sizeof(B)) != 0;
  }
  return mismatches;
}

int main() {
  ggml_cpu_init();
  double x4_max_abs = 0;
  // Four rows per call (Q8_0, prompts): the same arithmetic in the same order as one row, so the same bits.
  const auto x4 = [&](const std::vector<block_q8_0> & x, const std::vector<block_q8_0> & y, int m, const float * ref, int rows, int n) {
    const int nb = n / QK8_0;
    for (int r = 0; r + 4 <= rows; r += 4) {
      float s[4];
      ggml_vec_dot_q8_0_q8_0_x4(n, s, &x[(size_t) r * nb], sizeof(block_q8_0) * nb, &y[(size_t) m * nb]);
      for (int k = 0; k < 4; k++) x4_max_abs = std::fmax(x4_max_abs, std::fabs(s[k] - ref[r + k]));
    }
  };
  const auto q8_rows = [](int rows, int n) { return random_rows(rows, n, 0.5f); };
  // Q8_0 and Q4_0: interleaved eight bytes at a time in the plain builds, four in the relaxed ones.
#if defined(__wasm_relaxed_simd__)
  const int relaxed = 1, detected = hearth_dot16;
  const auto q8 = repacked_max_rel<block_q8_0x4, 4>(q8_rows, packer<block_q8_0x4, 4>(0), ggml_vec_dot_q8_0_q8_0, ggml_gemv_q8_0_4x4_q8_0, ggml_gemm_q8_0_4x4_q8_0, x4);
  const auto q4 = repacked_max_rel<block_q4_0x4, 4>(quantized_rows<block_q4_0, GGML_TYPE_Q4_0>, packer<block_q4_0x4, 4>(0x88), ggml_vec_dot_q4_0_q8_0_generic,
                                                    ggml_gemv_q4_0_4x4_q8_0, ggml_gemm_q4_0_4x4_q8_0, [](auto &&...) {});
#else
  const int relaxed = 0, detected = 0;
  const auto q8 = repacked_max_rel<block_q8_0x4, 8>(q8_rows, packer<block_q8_0x4, 8>(0), ggml_vec_dot_q8_0_q8_0, ggml_gemv_q8_0_4x8_q8_0, ggml_gemm_q8_0_4x8_q8_0, x4);
  const auto q4 = repacked_max_rel<block_q4_0x4, 8>(quantized_rows<block_q4_0, GGML_TYPE_Q4_0>, packer<block_q4_0x4, 8>(0x88), ggml_vec_dot_q4_0_q8_0_generic,
                                                    ggml_gemv_q4_0_4x8_q8_0, ggml_gemm_q4_0_4x8_q8_0, [](auto &&...) {});
#endif
  printf("{\"relaxed\":%d,\"dot16\":%d,\"cases\":%d,\"x4_max_abs\":%g,\"gemv_max_rel\":%g,\"gemm_max_rel\":%g", relaxed, detected, q8.cases, x4_max_abs, q8.gemv_max_rel, q8.gemm_max_rel);
  printf(",\"q4_0_gemv_max_rel\":%g,\"q4_0_gemm_max_rel\":%g", q4.gemv_max_rel, q4.gemm_max_rel);
  // The relaxed builds' kernels; the plain builds hold ggml's reference code here (they do not repack IQ4_NL).
  const auto iq4 = repacked_max_rel<block_iq4_nlx4, 4>(quantized_rows<block_iq4_nl, GGML_TYPE_IQ4_NL>, packer<block_iq4_nlx4, 4>(0), ggml_vec_dot_iq4_nl_q8_0_generic,
                                                       ggml_gemv_iq4_nl_4x4_q8_0, ggml_gemm_iq4_nl_4x4_q8_0, [](auto &&...) {});
  printf(",\"iq4_nl_gemv_max_rel\":%g,\"iq4_nl_gemm_max_rel\":%g", iq4.gemv_max_rel, iq4.gemm_max_rel);
#if defined(__wasm_relaxed_simd__)
  // Only the relaxed builds repack Q5_0 and Q5_1 (the plain ones have no such kernels).
  const auto q5_0 = repacked_max_rel<block_q5_0x4, 4>(quantized_rows<block_q5_0, GGML_TYPE_Q5_0>, pack_q5<block_q5_0x4, block_q5_0>,
                                                      ggml_vec_dot_q5_0_q8_0_generic, ggml_gemv_q5_0_4x4_q8_0, ggml_gemm_q5_0_4x4_q8_0, [](auto &&...) {});
  const auto q5_1 = repacked_max_rel<block_q5_1x4, 4>(quantized_rows<block_q5_1, GGML_TYPE_Q5_1>, pack_q5<block_q5_1x4, block_q5_1>,
                                                      q5_1_q8_0_reference, ggml_gemv_q5_1_4x4_q8_0, ggml_gemm_q5_1_4x4_q8_0, [](auto &&...) {});
  printf(",\"q5_0_gemv_max_rel\":%g,\"q5_0_gemm_max_rel\":%g,\"q5_1_gemv_max_rel\":%g,\"q5_1_gemm_max_rel\":%g",
         q5_0.gemv_max_rel, q5_0.gemm_max_rel, q5_1.gemv_max_rel, q5_1.gemm_max_rel);
#endif
  // Only the relaxed builds repack the K-quants and IQ4_XS.
  const struct { const char * name; ggml_type type; vec_dot_fn reference; gemm_fn gemv, gemm; } ks[] = {
    {"q4_K", GGML_TYPE_Q4_K, ggml_vec_dot_q4_K_q8_K_generic, ggml_gemv_q4_K_8x4_q8_K, ggml_gemm_q4_K_8x4_q8_K},
    {"q5_K", GGML_TYPE_Q5_K, ggml_vec_dot_q5_K_q8_K_generic, ggml_gemv_q5_K_8x4_q8_K, ggml_gemm_q5_K_8x4_q8_K},
    {"q6_K", GGML_TYPE_Q6_K, ggml_vec_dot_q6_K_q8_K_generic, ggml_gemv_q6_K_8x4_q8_K, ggml_gemm_q6_K_8x4_q8_K},
#if defined(__wasm_relaxed_simd__)
    {"iq4_xs", GGML_TYPE_IQ4_XS, ggml_vec_dot_iq4_xs_q8_K_generic, ggml_gemv_iq4_xs_8x4_q8_K, ggml_gemm_iq4_xs_8x4_q8_K},
#endif
  };
  for (const auto & k : ks) {
    const RepackedErrors e = k_repacked_max_rel(k.type, k.reference, k.gemv, k.gemm);
    printf(",\"%s_x8_cases\":%d,\"%s_gemv_max_rel\":%g,\"%s_gemm_max_rel\":%g", k.name, e.cases, k.name, e.gemv_max_rel, k.name, e.gemm_max_rel);
  }
  // The dot products wasm/patches rewrote or added, each against ggml's scalar code.
  const struct { const char * name; ggml_type type; vec_dot_fn reference; } dots[] = {
    {"q4_0", GGML_TYPE_Q4_0, ggml_vec_dot_q4_0_q8_0_generic},
    {"q4_K", GGML_TYPE_Q4_K, ggml_vec_dot_q4_K_q8_K_generic},
    {"q5_0", GGML_TYPE_Q5_0, ggml_vec_dot_q5_0_q8_0_generic},
    {"q5_1", GGML_TYPE_Q5_1, ggml_vec_dot_q5_1_q8_1_generic},
    {"q5_K", GGML_TYPE_Q5_K, ggml_vec_dot_q5_K_q8_K_generic},
    {"q6_K", GGML_TYPE_Q6_K, ggml_vec_dot_q6_K_q8_K_generic},
    {"iq4_nl", GGML_TYPE_IQ4_NL, ggml_vec_dot_iq4_nl_q8_0_generic},
    {"iq4_xs", GGML_TYPE_IQ4_XS, ggml_vec_dot_iq4_xs_q8_K_generic},
  };
  for (const auto & d : dots) printf(",\"%s_max_rel\":%g", d.name, dot_max_rel(d.type, d.reference));
  printf(",\"q8_0_quantize_mismatches\":%d,\"q8_1_quantize_mismatches\":%d", quantize_mismatches<block_q8_0>(quantize_row_q8_0, GGML_TYPE_Q8_0),
         quantize_mismatches<block_q8_1>(quantize_row_q8_1, GGML_TYPE_Q8_1));
  printf(",\"mat_quantize_mismatches\":%d", mat_quantize_mismatches<block_q8_0x4>(ggml_quantize_mat_q8_0_4x4, ggml_quantize_mat_q8_0_4x4_generic) +
         mat_quantize_mismatches<block_q8_0x4>(ggml_quantize_mat_q8_0_4x8, ggml_quantize_mat_q8_0_4x8_generic) +
         mat_quantize_mismatches<block_q8_Kx4>(ggml_quantize_mat_q8_K_4x4, ggml_quantize_mat_q8_K_4x4_generic));
  set_dot_mode(detected);
  printf("}\n");
  return 0;
}
