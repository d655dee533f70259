// Checks Hearth's kernels (wasm/patches) against ggml's own dot products, on random data of the shapes real models
// have: Q8_0 four-rows-per-call, and Q8_0 and Q4_0 repacked GEMV/GEMM, against the row-at-a-time dot product; the
// Q4_0, Q4_K, Q6_K, IQ4_NL and IQ4_XS dot products against ggml's scalar reference. Built with the single-thread wasm
// (wasm/build.mjs) and run by test/kernels.test.ts; prints one JSON object.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "ggml-cpu.h"
#define GGML_COMMON_DECL_CPP
#include "ggml-common.h"
#include "quants.h"
#include "repack.h"

extern "C" void quantize_row_q8_0(const float * x, void * y, int64_t k);

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

// Four rows interleaved eight bytes at a time, as ggml's repack (make_block_q8_0x4, make_block_q4_0x4) lays them out;
// Q4_0's nibbles get their top bit flipped there (XOR 0x88), which makes them signed.
template <typename X4, typename B>
static std::vector<X4> interleave(const std::vector<B> & q, int rows, int nb, uint8_t flip = 0) {
  constexpr int chunks = sizeof(B::qs) / 8 * 4;
  std::vector<X4> out((size_t) rows / 4 * nb);
  for (int g = 0; g < rows / 4; g++) {
    for (int l = 0; l < nb; l++) {
      X4 & o = out[(size_t) g * nb + l];
      for (int i = 0; i < 4; i++) o.d[i] = q[(size_t) (g * 4 + i) * nb + l].d;
      for (int i = 0; i < chunks; i++) {
        const uint8_t * from = (const uint8_t *) &q[(size_t) (g * 4 + i % 4) * nb + l].qs[(i / 4) * 8];
        for (int k = 0; k < 8; k++) ((uint8_t *) o.qs)[i * 8 + k] = from[k] ^ flip;
      }
    }
  }
  return out;
}

// Largest |GEMV - reference| and |GEMM - reference| for Q4_0 weights repacked four rows at a time, relative to the
// largest result; the reference is ggml's scalar row-at-a-time dot product.
static void q4_0_repacked_max_rel(double & gemv, double & gemm) {
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  for (int n : {64, 896, 4864}) {
    for (int rows : {4, 12, 20}) {
      const int nb = n / QK4_0;
      std::vector<float> f((size_t) rows * n);
      for (auto & v : f) v = dist(rng);
      std::vector<block_q4_0> x((size_t) rows * nb);
      ggml_get_type_traits(GGML_TYPE_Q4_0)->from_float_ref(f.data(), x.data(), (int64_t) rows * n);
      const auto xp = interleave<block_q4_0x4>(x, rows, nb, 0x88);
      for (int ny : {4, 8}) {
        const auto y = random_rows(ny, n, 3.0f);
        const auto yp = interleave<block_q8_0x4>(y, ny, nb);
        std::vector<float> ref((size_t) ny * rows), got((size_t) ny * rows);
        for (int m = 0; m < ny; m++) {
          for (int r = 0; r < rows; r++) {
            ggml_vec_dot_q4_0_q8_0_generic(n, &ref[(size_t) m * rows + r], 0, &x[(size_t) r * nb], 0, &y[(size_t) m * nb], 0, 1);
          }
          ggml_gemv_q4_0_4x8_q8_0(n, &got[(size_t) m * rows], rows, xp.data(), &y[(size_t) m * nb], 1, rows);
        }
        double scale = 0;
        for (float v : ref) scale = std::fmax(scale, std::fabs(v));
        for (size_t i = 0; i < ref.size(); i++) gemv = std::fmax(gemv, std::fabs(got[i] - ref[i]) / scale);
        ggml_gemm_q4_0_4x8_q8_0(n, got.data(), rows, xp.data(), yp.data(), ny, rows);
        for (size_t i = 0; i < ref.size(); i++) gemm = std::fmax(gemm, std::fabs(got[i] - ref[i]) / scale);
      }
    }
  }
}

typedef void (*vec_dot_fn)(int, float *, size_t, const void *, size_t, const void *, size_t, int);

// Largest |ours - ggml's scalar reference| for weights of type `tx` over random rows, relative to |a|·|b| (a dot
// product's natural scale; an error relative to the result itself blows up where the result is near zero).
static double dot_max_rel(ggml_type tx, vec_dot_fn reference) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto * cpu = ggml_get_type_traits_cpu(tx);
  const ggml_type ty = cpu->vec_dot_type;
  double worst = 0;
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
  return worst;
}

int main() {
  ggml_cpu_init();
  double x4_max_abs = 0, gemv_max_rel = 0, gemm_max_rel = 0;
  int cases = 0;
  for (int n : {64, 896, 4864}) {
    for (int rows : {4, 12, 20}) {
      const int nb = n / QK8_0;
      const auto x = random_rows(rows, n, 0.5f);
      const auto xp = interleave<block_q8_0x4>(x, rows, nb);
      for (int ny : {4, 8}) {
        const auto y = random_rows(ny, n, 3.0f);
        const auto yp = interleave<block_q8_0x4>(y, ny, nb);
        std::vector<float> ref((size_t) ny * rows), got((size_t) ny * rows);
        for (int m = 0; m < ny; m++) {
          for (int r = 0; r < rows; r++) {
            ggml_vec_dot_q8_0_q8_0(n, &ref[(size_t) m * rows + r], 0, &x[(size_t) r * nb], 0, &y[(size_t) m * nb], 0, 1);
          }
          // Four rows per call: the same arithmetic in the same order, so the same bits.
          for (int r = 0; r + 4 <= rows; r += 4) {
            float s[4];
            ggml_vec_dot_q8_0_q8_0_x4(n, s, &x[(size_t) r * nb], sizeof(block_q8_0) * nb, &y[(size_t) m * nb]);
            for (int k = 0; k < 4; k++) x4_max_abs = std::fmax(x4_max_abs, std::fabs(s[k] - ref[(size_t) m * rows + r + k]));
          }
          ggml_gemv_q8_0_4x8_q8_0(n, &got[(size_t) m * rows], rows, xp.data(), &y[(size_t) m * nb], 1, rows);
        }
        double scale = 0;
        for (float v : ref) scale = std::fmax(scale, std::fabs(v));
        for (size_t i = 0; i < ref.size(); i++) gemv_max_rel = std::fmax(gemv_max_rel, std::fabs(got[i] - ref[i]) / scale);
        ggml_gemm_q8_0_4x8_q8_0(n, got.data(), rows, xp.data(), yp.data(), ny, rows);
        for (size_t i = 0; i < ref.size(); i++) gemm_max_rel = std::fmax(gemm_max_rel, std::fabs(got[i] - ref[i]) / scale);
        cases++;
      }
    }
  }
  printf("{\"cases\":%d,\"x4_max_abs\":%g,\"gemv_max_rel\":%g,\"gemm_max_rel\":%g", cases, x4_max_abs, gemv_max_rel, gemm_max_rel);
  double q4_gemv = 0, q4_gemm = 0;
  q4_0_repacked_max_rel(q4_gemv, q4_gemm);
  printf(",\"q4_0_gemv_max_rel\":%g,\"q4_0_gemm_max_rel\":%g", q4_gemv, q4_gemm);
  // The dot products wasm/patches rewrote or added, each against ggml's scalar code.
  const struct { const char * name; ggml_type type; vec_dot_fn reference; } dots[] = {
    {"q4_0", GGML_TYPE_Q4_0, ggml_vec_dot_q4_0_q8_0_generic},
    {"q4_K", GGML_TYPE_Q4_K, ggml_vec_dot_q4_K_q8_K_generic},
    {"q6_K", GGML_TYPE_Q6_K, ggml_vec_dot_q6_K_q8_K_generic},
    {"iq4_nl", GGML_TYPE_IQ4_NL, ggml_vec_dot_iq4_nl_q8_0_generic},
    {"iq4_xs", GGML_TYPE_IQ4_XS, ggml_vec_dot_iq4_xs_q8_K_generic},
  };
  for (const auto & d : dots) printf(",\"%s_max_rel\":%g", d.name, dot_max_rel(d.type, d.reference));
  printf("}\n");
  return 0;
}
