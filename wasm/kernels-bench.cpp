// Times ggml's matrix product for each quantization type on the benchmark model's shapes (Qwen2.5-0.5B: 896 wide, a
// 4864-wide FFN), one thread, the way llama.cpp runs it: a MUL_MAT node computed by the CPU backend, weights in the
// repacking buffer where the build repacks that type (so repacked GEMV/GEMM, activation quantization and the
// remainder rows all count). Rows of activations: 1 (decoding one stream), 4 (four streams), 128 (a prompt).
// Built with the single-thread wasm builds (wasm/build.mjs) and, for the same source, natively (bench/scenarios/
// kernels.ts); prints one JSON object: per type, shape and row count, milliseconds per product and multiply-adds per
// nanosecond.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "ggml.h"
#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "repack.h"
// Also built against llama.cpp without Hearth's patches (build:wasm --no-patches), which has no relaxed.h.
#if defined(__wasm_relaxed_simd__) && __has_include("arch/wasm/relaxed.h")
#define HEARTH_DOT_MODES
#include "arch/wasm/relaxed.h"
#endif

#if defined(__EMSCRIPTEN__)
#include <emscripten.h>
static double now_ms() { return emscripten_get_now(); }
#else
static double now_ms() { return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
#endif

struct Shape { const char * name; int n, nc; };

// One product W (n x nc, `type`) x X (n x nr, f32); returns the best time per product over three rounds, or -1 when the
// type cannot take this shape.
static double time_mul_mat(ggml_backend_t cpu, ggml_type type, Shape shape, int nr, bool & repacked) {
    if (shape.n % ggml_blck_size(type) != 0) return -1;
    ggml_init_params ip = { 8 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true };
    ggml_context * ctx = ggml_init(ip);
    ggml_tensor * w = ggml_new_tensor_2d(ctx, type, shape.n, shape.nc);
    ggml_tensor * x = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, shape.n, nr);
    ggml_tensor * y = ggml_mul_mat(ctx, w, x);
    ggml_cgraph * gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, y);

    // The weights: in the repacking buffer when this build repacks the type (its init_tensor finds traits for it).
    ggml_backend_buffer_type_t repack = ggml_backend_cpu_repack_buffer_type();
    ggml_backend_buffer_t wbuf = ggml_backend_buft_alloc_buffer(repack, ggml_backend_buft_get_alloc_size(repack, w));
    ggml_backend_tensor_alloc(wbuf, w, ggml_backend_buffer_get_base(wbuf));
    repacked = w->extra != nullptr;
    if (!repacked) {
        ggml_backend_buffer_free(wbuf);
        w->buffer = nullptr;
        w->data = nullptr;
        wbuf = ggml_backend_buft_alloc_buffer(ggml_backend_cpu_buffer_type(), ggml_nbytes(w));
        ggml_backend_tensor_alloc(wbuf, w, ggml_backend_buffer_get_base(wbuf));
    }
    ggml_backend_buffer_t rest = ggml_backend_alloc_ctx_tensors_from_buft(ctx, ggml_backend_cpu_buffer_type());

    std::mt19937 rng(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> f((size_t) shape.n * shape.nc);
    for (auto & v : f) v = dist(rng) * 0.05f;
    std::vector<uint8_t> q(ggml_nbytes(w));
    ggml_quantize_chunk(type, f.data(), q.data(), 0, shape.nc, shape.n, nullptr);
    ggml_backend_tensor_set(w, q.data(), 0, q.size());
    std::vector<float> xs((size_t) shape.n * nr);
    for (auto & v : xs) v = dist(rng);
    ggml_backend_tensor_set(x, xs.data(), 0, xs.size() * sizeof(float));

    ggml_backend_graph_compute(cpu, gf); // warm-up
    double best = 1e30;
    for (int round = 0; round < 3; round++) {
        int reps = 0;
        const double t0 = now_ms();
        double t = t0;
        while (t - t0 < 150 || reps < 2) {
            ggml_backend_graph_compute(cpu, gf);
            reps++;
            t = now_ms();
        }
        best = std::fmin(best, (t - t0) / reps);
    }
    float out0;
    ggml_backend_tensor_get(y, &out0, 0, sizeof(float));
    if (!std::isfinite(out0)) best = -2;
    ggml_backend_buffer_free(rest);
    ggml_backend_buffer_free(wbuf);
    ggml_free(ctx);
    return best;
}

int main(int argc, char ** argv) {
    ggml_cpu_init();
    ggml_backend_t cpu = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(cpu, 1);
    // Optional: only the types named on the command line (ggml's names, e.g. q4_K); "dot32" or "dot16" forces the relaxed
    // kernels' path (arch/wasm/relaxed.h) instead of the one this CPU picked.
    int dot16 = 0;
#if defined(HEARTH_DOT_MODES)
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "dot32") == 0) hearth_dot16 = 0;
        if (strcmp(argv[i], "dot16") == 0) hearth_dot16 = 1;
    }
    dot16 = hearth_dot16;
#endif
    const ggml_type all[] = { GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_IQ4_NL,
                              GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_IQ4_XS };
    const Shape shapes[] = { { "up", 896, 4864 }, { "down", 4864, 896 } };
#if defined(__wasm_relaxed_simd__)
    const int relaxed = 1;
#else
    const int relaxed = 0;
#endif
    printf("{\"relaxed\":%d,\"dot16\":%d,\"results\":[", relaxed, dot16);
    bool first = true;
    for (ggml_type type : all) {
        bool named = false, match = false;
        for (int i = 1; i < argc; i++) {
            if (strncmp(argv[i], "dot", 3) == 0) continue;
            named = true;
            match |= strcmp(argv[i], ggml_type_name(type)) == 0;
        }
        if (named && !match) continue;
        for (const Shape & shape : shapes) {
            for (int nr : { 1, 4, 128 }) {
                bool repacked = false;
                const double ms = time_mul_mat(cpu, type, shape, nr, repacked);
                if (ms == -1) continue;
                printf("%s{\"type\":\"%s\",\"shape\":\"%s\",\"rows\":%d,\"repacked\":%d,\"ms\":%.4f,\"macs_per_ns\":%.3f}", first ? "" : ",",
                       ggml_type_name(type), shape.name, nr, repacked ? 1 : 0, ms, ms > 0 ? (double) shape.n * shape.nc * nr / (ms * 1e6) : 0.0);
                first = false;
            }
        }
    }
    printf("]}\n");
    ggml_backend_free(cpu);
    return 0;
}
