// Hearth's glue over llama.h: flat hearth_* functions for the TypeScript binding in src/backends/llamacpp/binding/.
// Only llama.h, ggml-cpu.h and libmtmd (mtmd.h, mtmd-helper.h: images and audio) are used (no llama.cpp "common"
// code), so the binding sees one small C surface.
// Conventions: handles are opaque pointers; buffers are allocated and freed by the caller (the TS side owns every
// allocation); functions that can fail return a negative number or null and leave the reason in the llama.cpp log.

#include <emscripten.h>

#include <malloc.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

#ifndef HEARTH_LLAMA_BUILD
#define HEARTH_LLAMA_BUILD "unknown"
#endif

// The AddressSanitizer build (wasm/build.mjs --sanitize address): a small quarantine for freed memory, because the
// unit tests start many modules in one process and each holds its own (at the default 256 MB one test worker grew past
// 8 GB). No allocation stacks: in wasm each is a JavaScript stack trace (new Error().stack, through the test runner's
// source maps), taken at every malloc — loading a model's vocabulary took 45 s instead of 1. A report still shows where
// the bad access happened; where the memory was allocated or freed it leaves out.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
extern "C" const char * __asan_default_options() { return "quarantine_size_mb=16:malloc_context_size=0"; }
#endif
#endif

// --- calls into JS -------------------------------------------------------------------------------------------------

// llama.cpp's log, forwarded so a failed load can say why (the binding keeps the last lines).
// (Number: in the memory64 build a pointer reaches JS as a BigInt.)
EM_JS(void, hearth_js_log, (int level, const char * text), {
  if (Module['hearthLog']) Module['hearthLog'](level, UTF8ToString(Number(text)));
});

// Load progress 0..1; JS returns 0 to cancel the load.
EM_JS(int, hearth_js_progress, (float progress), {
  return Module['hearthProgress'] ? (Module['hearthProgress'](progress) ? 1 : 0) : 1;
});

static void on_log(enum ggml_log_level level, const char * text, void *) { hearth_js_log((int) level, text); }

static bool on_progress(float progress, void *) { return hearth_js_progress(progress) != 0; }

// The WebGPU build leaves no GPU work pending when a call returns: the calls that may wait (JSPI, wasm/build.mjs) end
// with the queue idle, so the ones that may not — the frees, whose llama.cpp destructors synchronize — never have to
// (a wait there would throw through a destructor and abort). On the CPU these return at once.
static void idle(llama_context * ctx) { llama_synchronize(ctx); }
static void idle_gpus() {
  for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    if (ggml_backend_dev_type(dev) != GGML_BACKEND_DEVICE_TYPE_GPU) continue;
    ggml_backend_t backend = ggml_backend_dev_init(dev, nullptr);
    if (!backend) continue;
    ggml_backend_synchronize(backend);
    ggml_backend_free(backend);
  }
}

extern "C" {

// --- process -------------------------------------------------------------------------------------------------------

EMSCRIPTEN_KEEPALIVE void hearth_init() {
  llama_log_set(on_log, nullptr);
  mtmd_helper_log_set(on_log, nullptr);
  llama_backend_init();
}

EMSCRIPTEN_KEEPALIVE const char * hearth_llama_build() { return HEARTH_LLAMA_BUILD; }

// Bytes currently allocated with malloc: lets tests check that the binding frees what it allocates.
EMSCRIPTEN_KEEPALIVE double hearth_heap_in_use() { return (double) mallinfo().uordblks; }
// The most the heap has held from malloc's point of view (dlmalloc's largest footprint): what a model load cost it.
EMSCRIPTEN_KEEPALIVE double hearth_heap_peak() { return (double) mallinfo().usmblks; }

// 1 when ggml-cpu was compiled with its wasm SIMD kernels (the generic fallback is ~4x slower).
EMSCRIPTEN_KEEPALIVE int hearth_has_wasm_simd() { return ggml_cpu_has_wasm_simd(); }

// The relaxed builds' choice of 8-bit dot product on this CPU (ggml-cpu's arch/wasm/relaxed.h, set by
// llama_backend_init): 1 products summed in int16, 0 one relaxed instruction each, -1 not a relaxed build. Weak: this
// file is compiled once for the plain and the relaxed builds, and only the relaxed ggml-cpu defines it.
extern __attribute__((weak)) int hearth_dot16;
EMSCRIPTEN_KEEPALIVE int hearth_simd_dot16() { return &hearth_dot16 ? hearth_dot16 : -1; }

// GPU devices ggml found: in the WebGPU build one when the page's adapter can run llama.cpp's WebGPU backend, else 0
// (always 0 in the CPU builds). The first call looks for the adapter (it suspends the wasm there: JSPI).
EMSCRIPTEN_KEEPALIVE int hearth_gpu_devices() {
  int n = 0;
  for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
    if (ggml_backend_dev_type(ggml_backend_dev_get(i)) == GGML_BACKEND_DEVICE_TYPE_GPU) n++;
  }
  return n;
}

// The first GPU device's description (the adapter), or "" when there is none.
EMSCRIPTEN_KEEPALIVE const char * hearth_gpu_name() {
  for (size_t i = 0; i < ggml_backend_dev_count(); i++) {
    ggml_backend_dev_t dev = ggml_backend_dev_get(i);
    if (ggml_backend_dev_type(dev) == GGML_BACKEND_DEVICE_TYPE_GPU) return ggml_backend_dev_description(dev);
  }
  return "";
}

// --- model ---------------------------------------------------------------------------------------------------------

// Reads the GGUF at `path` (a WORKERFS mount of a Blob in the browser, NODEFS in Node): llama.cpp copies tensors
// chunk by chunk from the file into its own buffers, so the file is never held in the heap as a whole.
// `repack` lets ggml store weights interleaved for its faster kernels (wasm/patches: Q8_0); tests turn it off to
// compare both paths. `gpu_layers`: how many layers go to the GPU device, when there is one (the WebGPU build);
// llama.cpp streams their weights from the file into GPU buffers.
EMSCRIPTEN_KEEPALIVE llama_model * hearth_model_load(const char * path, int vocab_only, int repack, int gpu_layers) {
  llama_model_params params = llama_model_default_params();
  params.n_gpu_layers = gpu_layers;
  params.load_mode = LLAMA_LOAD_MODE_NONE;  // no mmap in wasm
  params.vocab_only = vocab_only != 0;
  params.use_extra_bufts = repack != 0;
  params.progress_callback = on_progress;
  llama_model * model = llama_model_load_from_file(path, params);
  if (gpu_layers != 0) idle_gpus();  // uploads end with a compute pass for a tensor's last bytes
  return model;
}

EMSCRIPTEN_KEEPALIVE void hearth_model_free(llama_model * model) { llama_model_free(model); }

EMSCRIPTEN_KEEPALIVE int hearth_model_n_ctx_train(const llama_model * m) { return llama_model_n_ctx_train(m); }
EMSCRIPTEN_KEEPALIVE int hearth_model_n_embd(const llama_model * m) { return llama_model_n_embd(m); }
EMSCRIPTEN_KEEPALIVE int hearth_model_n_layer(const llama_model * m) { return llama_model_n_layer(m); }
EMSCRIPTEN_KEEPALIVE int hearth_model_n_head(const llama_model * m) { return llama_model_n_head(m); }
EMSCRIPTEN_KEEPALIVE int hearth_model_n_head_kv(const llama_model * m) { return llama_model_n_head_kv(m); }
// 64-bit counts come back as doubles: exact below 2^53, and no BigInt plumbing through emscripten 3.1.6.
// What the model's memory is: 0 attention, 1 recurrent (Mamba, RWKV), 2 hybrid (attention and recurrent layers).
EMSCRIPTEN_KEEPALIVE int hearth_model_memory(const llama_model * m) {
  return llama_model_is_hybrid(m) ? 2 : llama_model_is_recurrent(m) ? 1 : 0;
}
EMSCRIPTEN_KEEPALIVE int hearth_model_n_swa(const llama_model * m) { return llama_model_n_swa(m); }
EMSCRIPTEN_KEEPALIVE double hearth_model_n_params(const llama_model * m) { return (double) llama_model_n_params(m); }
EMSCRIPTEN_KEEPALIVE double hearth_model_size(const llama_model * m) { return (double) llama_model_size(m); }
EMSCRIPTEN_KEEPALIVE int hearth_model_desc(const llama_model * m, char * buf, int len) {
  return llama_model_desc(m, buf, len);
}
EMSCRIPTEN_KEEPALIVE const char * hearth_model_chat_template(const llama_model * m) {
  return llama_model_chat_template(m, nullptr);
}
// A named template of the GGUF (tokenizer.chat_template.<name>, e.g. "rerank"), or null.
EMSCRIPTEN_KEEPALIVE const char * hearth_model_named_template(const llama_model * m, const char * name) {
  return llama_model_chat_template(m, name);
}
EMSCRIPTEN_KEEPALIVE int hearth_model_meta_count(const llama_model * m) { return llama_model_meta_count(m); }
EMSCRIPTEN_KEEPALIVE int hearth_model_meta_key(const llama_model * m, int i, char * buf, int len) {
  return llama_model_meta_key_by_index(m, i, buf, len);
}
EMSCRIPTEN_KEEPALIVE int hearth_model_meta_val(const llama_model * m, int i, char * buf, int len) {
  return llama_model_meta_val_str_by_index(m, i, buf, len);
}

// --- vocabulary ----------------------------------------------------------------------------------------------------

static const llama_vocab * vocab_of(const llama_model * m) { return llama_model_get_vocab(m); }

EMSCRIPTEN_KEEPALIVE int hearth_vocab_n_tokens(const llama_model * m) { return llama_vocab_n_tokens(vocab_of(m)); }
EMSCRIPTEN_KEEPALIVE int hearth_vocab_bos(const llama_model * m) { return llama_vocab_bos(vocab_of(m)); }
EMSCRIPTEN_KEEPALIVE int hearth_vocab_eos(const llama_model * m) { return llama_vocab_eos(vocab_of(m)); }
EMSCRIPTEN_KEEPALIVE int hearth_vocab_sep(const llama_model * m) { return llama_vocab_sep(vocab_of(m)); }
EMSCRIPTEN_KEEPALIVE int hearth_vocab_add_bos(const llama_model * m) { return llama_vocab_get_add_bos(vocab_of(m)); }

// Writes every end-of-generation token id into `out`; returns how many there are (may exceed `max`).
EMSCRIPTEN_KEEPALIVE int hearth_vocab_eog_tokens(const llama_model * m, int32_t * out, int max) {
  const llama_vocab * vocab = vocab_of(m);
  int n = 0;
  for (llama_token t = 0; t < llama_vocab_n_tokens(vocab); t++) {
    if (!llama_vocab_is_eog(vocab, t)) continue;
    if (n < max) out[n] = t;
    n++;
  }
  return n;
}

// The first token id below `n` whose text or kind differs between two models' vocabularies, or `n`: a draft model
// for speculative decoding must read and write text as the model does (one call: ~150,000 tokens compared in wasm,
// not as many calls from JS).
EMSCRIPTEN_KEEPALIVE int hearth_vocab_first_difference(const llama_model * a, const llama_model * b, int n) {
  const llama_vocab * va = vocab_of(a);
  const llama_vocab * vb = vocab_of(b);
  for (llama_token t = 0; t < n; t++) {
    if (llama_vocab_get_attr(va, t) != llama_vocab_get_attr(vb, t)) return t;
    if (std::strcmp(llama_vocab_get_text(va, t), llama_vocab_get_text(vb, t)) != 0) return t;
  }
  return n;
}

// Returns the token count, or minus the count needed when `max` is too small.
EMSCRIPTEN_KEEPALIVE int hearth_tokenize(const llama_model * m, const char * text, int len, int32_t * out, int max,
                                         int add_special, int parse_special) {
  return llama_tokenize(vocab_of(m), text, len, out, max, add_special != 0, parse_special != 0);
}

// The bytes of one token (not NUL-terminated, possibly an incomplete UTF-8 sequence); minus the size needed when
// `len` is too small.
EMSCRIPTEN_KEEPALIVE int hearth_token_to_piece(const llama_model * m, int token, char * buf, int len, int special) {
  return llama_token_to_piece(vocab_of(m), token, buf, len, 0, special != 0);
}

// --- context -------------------------------------------------------------------------------------------------------

// A context plus what it needs beside it: a thread pool (a persistent pool measured 5-10% faster than ggml's
// per-graph one) and a reusable batch.
struct hearth_context {
  llama_context *   ctx;
  ggml_threadpool * pool;
  bool              shared_pool;
  llama_batch       batch;
  int               n_batch;
};

// Contexts of the same thread count share one pool: a draft model's context beside the model's would otherwise bring
// a second set of threads that spin-wait on the same cores after each graph (ggml's threads poll before they sleep);
// the speculative benchmark's draft decoded 27.8 tok/s with one pool, 24.7 with two (2 threads, one run each).
// Contexts decode one at a time (one JS thread calls in), so one pool serves all. It stays when its last context
// goes: a context that grows is freed and made again at once.
static ggml_threadpool * g_pool = nullptr;
static int g_pool_threads = 0;
static int g_pool_users = 0;

static ggml_threadpool * pool_take(int n_threads, bool & shared) {
  if (g_pool && g_pool_threads != n_threads && g_pool_users == 0) {
    ggml_threadpool_free(g_pool);
    g_pool = nullptr;
  }
  if (!g_pool) {
    ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
    g_pool = ggml_threadpool_new(&tpp);
    g_pool_threads = n_threads;
  }
  shared = g_pool && g_pool_threads == n_threads;
  if (shared) {
    g_pool_users++;
    return g_pool;
  }
  ggml_threadpool_params tpp = ggml_threadpool_params_default(n_threads);
  return ggml_threadpool_new(&tpp);
}

static void pool_give(ggml_threadpool * pool, bool shared) {
  if (shared) g_pool_users--;
  else ggml_threadpool_free(pool);
}

EMSCRIPTEN_KEEPALIVE hearth_context * hearth_context_new(llama_model * model, int n_ctx, int n_batch, int n_ubatch,
                                                         int n_seq_max, int n_threads, int type_k, int type_v,
                                                         int flash_attn, int swa_full) {
  llama_context_params params = llama_context_default_params();
  params.n_ctx = n_ctx;
  params.n_batch = n_batch;
  params.n_ubatch = n_ubatch;
  params.n_seq_max = n_seq_max;
  params.n_threads = n_threads;
  params.n_threads_batch = n_threads;
  params.type_k = (ggml_type) type_k;
  params.type_v = (ggml_type) type_v;
  params.flash_attn_type = (llama_flash_attn_type) flash_attn;
  params.swa_full = swa_full != 0;
  params.kv_unified = true;  // one KV buffer shared by all sequences: seq_cp is a cell copy, not a data copy
  params.no_perf = true;

  bool shared = false;
  ggml_threadpool * pool = pool_take(n_threads, shared);
  if (!pool) return nullptr;

  llama_context * ctx = llama_init_from_model(model, params);
  if (!ctx) {
    pool_give(pool, shared);
    return nullptr;
  }
  llama_attach_threadpool(ctx, pool, pool);

  idle(ctx);  // the KV cache was cleared on the GPU
  hearth_context * h =
      new (std::nothrow) hearth_context{ctx, pool, shared, llama_batch_init(n_batch, 0, 1), n_batch};
  if (!h) {
    llama_free(ctx);
    pool_give(pool, shared);
  }
  return h;
}

EMSCRIPTEN_KEEPALIVE void hearth_context_free(hearth_context * h) {
  if (!h) return;
  llama_batch_free(h->batch);
  llama_free(h->ctx);
  pool_give(h->pool, h->shared_pool);
  delete h;
}

EMSCRIPTEN_KEEPALIVE int hearth_context_n_ctx(hearth_context * h) { return llama_n_ctx(h->ctx); }

// One llama_decode over n tokens, each with its own position and sequence id; want_logits[i] marks the outputs.
// Returns llama_decode's status (0 ok, 1 no KV slot, 2 aborted, <0 error) or -100 when n exceeds n_batch.
EMSCRIPTEN_KEEPALIVE int hearth_decode(hearth_context * h, const int32_t * tokens, const int32_t * pos,
                                       const int32_t * seq, const int8_t * want_logits, int n) {
  if (n <= 0 || n > h->n_batch) return -100;
  llama_batch & b = h->batch;
  b.n_tokens = n;
  for (int i = 0; i < n; i++) {
    b.token[i] = tokens[i];
    b.pos[i] = pos[i];
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = seq[i];
    b.logits[i] = want_logits[i];
  }
  int status = llama_decode(h->ctx, b);
  // A GPU backend computes asynchronously and llama.cpp waits on the first read of the outputs. Waiting here keeps
  // that wait (a JSPI suspension in the WebGPU build) inside this one call, so reading logits, embeddings and
  // sampling never suspend (see idle).
  idle(h->ctx);
  return status;
}

// Logits of the i-th output of the last decode (i counts batch positions, as in llama_get_logits_ith).
EMSCRIPTEN_KEEPALIVE float * hearth_logits(hearth_context * h, int i) { return llama_get_logits_ith(h->ctx, i); }

// --- KV memory -----------------------------------------------------------------------------------------------------

static llama_memory_t mem(hearth_context * h) { return llama_get_memory(h->ctx); }

EMSCRIPTEN_KEEPALIVE void hearth_memory_clear(hearth_context * h) {
  llama_memory_clear(mem(h), true);
  idle(h->ctx);
}
EMSCRIPTEN_KEEPALIVE int hearth_seq_rm(hearth_context * h, int seq, int p0, int p1) {
  return llama_memory_seq_rm(mem(h), seq, p0, p1);
}
EMSCRIPTEN_KEEPALIVE void hearth_seq_cp(hearth_context * h, int src, int dst, int p0, int p1) {
  llama_memory_seq_cp(mem(h), src, dst, p0, p1);
}
EMSCRIPTEN_KEEPALIVE void hearth_seq_keep(hearth_context * h, int seq) { llama_memory_seq_keep(mem(h), seq); }
EMSCRIPTEN_KEEPALIVE void hearth_seq_add(hearth_context * h, int seq, int p0, int p1, int delta) {
  llama_memory_seq_add(mem(h), seq, p0, p1, delta);
}
// Whether seq_add can move cells (a context shift): not for M-RoPE models, whose seq_add aborts.
EMSCRIPTEN_KEEPALIVE int hearth_memory_can_shift(hearth_context * h) { return llama_memory_can_shift(mem(h)) ? 1 : 0; }
EMSCRIPTEN_KEEPALIVE int hearth_seq_pos_min(hearth_context * h, int seq) { return llama_memory_seq_pos_min(mem(h), seq); }
EMSCRIPTEN_KEEPALIVE int hearth_seq_pos_max(hearth_context * h, int seq) { return llama_memory_seq_pos_max(mem(h), seq); }

// --- sequence state ------------------------------------------------------------------------------------------------

// flags: 0, or LLAMA_STATE_SEQ_FLAGS_PARTIAL_ONLY for just the part that cannot be rolled back (recurrent, SWA).
EMSCRIPTEN_KEEPALIVE size_t hearth_state_seq_size(hearth_context * h, int seq, int flags) {
  return llama_state_seq_get_size_ext(h->ctx, seq, flags);
}
EMSCRIPTEN_KEEPALIVE size_t hearth_state_seq_get(hearth_context * h, uint8_t * dst, size_t size, int seq, int flags) {
  return llama_state_seq_get_data_ext(h->ctx, dst, size, seq, flags);
}
// Returns the bytes read, 0 when the state does not fit this context (wrong model, layout or size).
EMSCRIPTEN_KEEPALIVE size_t hearth_state_seq_set(hearth_context * h, const uint8_t * src, size_t size, int seq,
                                                 int flags) {
  size_t n = llama_state_seq_set_data_ext(h->ctx, src, size, seq, flags);
  idle(h->ctx);
  return n;
}

// --- quantization --------------------------------------------------------------------------------------------------

// Writes `in` quantized to llama_ftype `ftype` at `out` with llama.cpp's own quantizer (the llama-quantize tool's
// defaults, quantized inputs allowed: test and benchmark models are requantized). Returns 0 on success.
EMSCRIPTEN_KEEPALIVE int hearth_quantize(const char * in, const char * out, int ftype, int nthread) {
  llama_model_quantize_params params = llama_model_quantize_default_params();
  params.ftype = (llama_ftype) ftype;
  params.nthread = nthread;
  params.allow_requantize = true;
  return (int) llama_model_quantize(in, out, &params);
}

// --- sampling ------------------------------------------------------------------------------------------------------

// A request's sampler: the chain llama.cpp's own tools use, in their order (penalties, top-k, top-p, min-p,
// temperature, then a seeded draw; temperature <= 0 means greedy), and an optional GBNF grammar beside it.
// The grammar is kept out of the chain because checking it costs a pass over the whole vocabulary: the chain picks
// a token first and the grammar checks only that one; only when it is refused is the grammar applied to every
// candidate and the chain run again (llama.cpp's common sampler does the same).
struct hearth_sampler {
  llama_sampler *                chain;
  llama_sampler *                grammar;  // null without a grammar
  std::vector<llama_token_data>  cur;
};

static llama_sampler * chain_new(const llama_model * m, float temp, int top_k, float top_p, float min_p,
                                 int penalty_last_n, float repeat_penalty, float frequency_penalty,
                                 float presence_penalty, uint32_t seed) {
  llama_sampler * chain = llama_sampler_chain_init(llama_sampler_chain_default_params());
  if (repeat_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f) {
    llama_sampler_chain_add(chain, llama_sampler_init_penalties(hearth_vocab_n_tokens(m), penalty_last_n,
                                                                repeat_penalty, frequency_penalty, presence_penalty));
  }
  if (temp <= 0.0f) {
    llama_sampler_chain_add(chain, llama_sampler_init_greedy());
    return chain;
  }
  if (top_k > 0) llama_sampler_chain_add(chain, llama_sampler_init_top_k(top_k));
  if (top_p < 1.0f) llama_sampler_chain_add(chain, llama_sampler_init_top_p(top_p, 1));
  if (min_p > 0.0f) llama_sampler_chain_add(chain, llama_sampler_init_min_p(min_p, 1));
  llama_sampler_chain_add(chain, llama_sampler_init_temp(temp));
  llama_sampler_chain_add(chain, llama_sampler_init_dist(seed));
  return chain;
}

// `grammar` is GBNF text with a rule named "root", or null. Returns null when the grammar does not parse (the
// reason is in the llama.cpp log).
EMSCRIPTEN_KEEPALIVE hearth_sampler * hearth_sampler_new(const llama_model * m, float temp, int top_k, float top_p,
                                                         float min_p, int penalty_last_n, float repeat_penalty,
                                                         float frequency_penalty, float presence_penalty,
                                                         uint32_t seed, const char * grammar) {
  llama_sampler * g = nullptr;
  if (grammar && grammar[0]) {
    g = llama_sampler_init_grammar(vocab_of(m), grammar, "root");
    if (!g) return nullptr;
  }
  llama_sampler * chain = chain_new(m, temp, top_k, top_p, min_p, penalty_last_n, repeat_penalty, frequency_penalty,
                                    presence_penalty, seed);
  return new hearth_sampler{chain, g, {}};
}

static void fill(hearth_sampler * s, const float * logits, int n_vocab, llama_token_data_array & arr) {
  s->cur.resize(n_vocab);
  for (llama_token t = 0; t < n_vocab; t++) s->cur[t] = llama_token_data{t, logits[t], 0.0f};
  arr = llama_token_data_array{s->cur.data(), (size_t) n_vocab, -1, false};
}

// Samples from output i of the last decode and records the token in the samplers' history (penalties, grammar).
EMSCRIPTEN_KEEPALIVE int hearth_sampler_sample(hearth_sampler * s, hearth_context * h, int i) {
  const float * logits = llama_get_logits_ith(h->ctx, i);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(h->ctx)));
  llama_token_data_array arr;
  fill(s, logits, n_vocab, arr);
  llama_sampler_apply(s->chain, &arr);
  llama_token token = arr.data[arr.selected].id;
  if (s->grammar) {
    llama_token_data one{token, 1.0f, 0.0f};
    llama_token_data_array single{&one, 1, -1, false};
    llama_sampler_apply(s->grammar, &single);
    if (single.data[0].logit == -INFINITY) {
      fill(s, logits, n_vocab, arr);
      llama_sampler_apply(s->grammar, &arr);
      llama_sampler_apply(s->chain, &arr);
      token = arr.data[arr.selected].id;
    }
    llama_sampler_accept(s->grammar, token);
  }
  llama_sampler_accept(s->chain, token);
  return token;
}

// Records a token that was not sampled (the prompt's tail, for the penalties).
EMSCRIPTEN_KEEPALIVE void hearth_sampler_accept(hearth_sampler * s, int token) { llama_sampler_accept(s->chain, token); }

// Which of the n tokens the grammar allows next (out[k] = 1 or 0), and, when accept >= 0, moves the grammar past
// that token. For tests: llama.cpp checks a few candidates and many candidates by different paths (patch 0022).
EMSCRIPTEN_KEEPALIVE int hearth_sampler_grammar_check(hearth_sampler * s, const int * tokens, int n, uint8_t * out,
                                                      int accept) {
  if (!s->grammar) return 0;
  s->cur.resize(n);
  for (int k = 0; k < n; k++) s->cur[k] = llama_token_data{tokens[k], 0.0f, 0.0f};
  llama_token_data_array arr{s->cur.data(), (size_t) n, -1, false};
  llama_sampler_apply(s->grammar, &arr);
  for (int k = 0; k < n; k++) out[k] = arr.data[k].logit == -INFINITY ? 0 : 1;
  if (accept >= 0) llama_sampler_accept(s->grammar, accept);
  return 1;
}

EMSCRIPTEN_KEEPALIVE void hearth_sampler_free(hearth_sampler * s) {
  if (!s) return;
  llama_sampler_free(s->chain);
  if (s->grammar) llama_sampler_free(s->grammar);
  delete s;
}

// The log-probability of `token` at output i of the last decode, from the raw logits (a log-softmax computed around
// the largest logit, so no exp overflows), and the `n_top` most likely tokens with theirs, most likely first.
EMSCRIPTEN_KEEPALIVE float hearth_logprobs(hearth_context * h, int i, int token, int n_top, int32_t * top_ids,
                                           float * top_logprobs) {
  const float * logits = llama_get_logits_ith(h->ctx, i);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(h->ctx)));
  float max = -INFINITY;
  for (int t = 0; t < n_vocab; t++) max = logits[t] > max ? logits[t] : max;
  double sum = 0;
  for (int t = 0; t < n_vocab; t++) sum += std::exp((double) (logits[t] - max));
  const float lse = max + (float) std::log(sum);
  int n = 0;  // top_ids[0..n) sorted by logit, descending
  for (int t = 0; t < n_vocab && n_top > 0; t++) {
    if (n == n_top && logits[t] <= logits[top_ids[n - 1]]) continue;
    int k = n < n_top ? n++ : n - 1;
    while (k > 0 && logits[top_ids[k - 1]] < logits[t]) {
      top_ids[k] = top_ids[k - 1];
      k--;
    }
    top_ids[k] = t;
  }
  for (int k = 0; k < n; k++) top_logprobs[k] = logits[top_ids[k]] - lse;
  return logits[token] - lse;
}

// The likeliest token at output i of the last decode, and in `p` its probability among the `k` likeliest (a softmax
// over those k alone, as llama.cpp's draft sampler, top-k then the candidates' probabilities, gives it): what a draft
// model guesses, and how sure it is. One pass over the logits, no exp over the whole vocabulary.
EMSCRIPTEN_KEEPALIVE int hearth_top_token(hearth_context * h, int i, int k, float * p) {
  const float * logits = llama_get_logits_ith(h->ctx, i);
  const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(h->ctx)));
  float top[16];
  int n = 0;  // top[0..n) descending
  k = k < 1 ? 1 : (k > 16 ? 16 : k);
  int best = 0;
  for (int t = 0; t < n_vocab; t++) {
    const float l = logits[t];
    if (n == k && l <= top[n - 1]) continue;
    int j = n < k ? n++ : n - 1;
    while (j > 0 && top[j - 1] < l) {
      top[j] = top[j - 1];
      j--;
    }
    top[j] = l;
    if (j == 0) best = t;
  }
  double sum = 0;
  for (int j = 0; j < n; j++) sum += std::exp((double) (top[j] - top[0]));
  *p = (float) (1.0 / sum);
  return best;
}

// --- embeddings ----------------------------------------------------------------------------------------------------

// Embedding outputs instead of logits for the next decodes (pooled per sequence as the model's GGUF says).
EMSCRIPTEN_KEEPALIVE void hearth_set_embeddings(hearth_context * h, int on) { llama_set_embeddings(h->ctx, on != 0); }
// llama_pooling_type: -1 unspecified, 0 none, 1 mean, 2 cls, 3 last, 4 rank (a reranker's score).
EMSCRIPTEN_KEEPALIVE int hearth_pooling_type(hearth_context * h) { return (int) llama_pooling_type(h->ctx); }
// The pooled embedding of sequence `seq` after the last decode (n_embd floats; n_cls_out scores with rank pooling).
EMSCRIPTEN_KEEPALIVE float * hearth_embeddings_seq(hearth_context * h, int seq) {
  return llama_get_embeddings_seq(h->ctx, seq);
}
EMSCRIPTEN_KEEPALIVE int hearth_model_n_cls_out(const llama_model * m) { return (int) llama_model_n_cls_out(m); }

// --- media (libmtmd) -----------------------------------------------------------------------------------------------

// A model's projector (mmproj GGUF): the image/audio encoder whose outputs the model reads as embeddings.
// `marker` is the text that stands for a media input in a prompt (the caller picks one no user text can hold).
// `use_gpu`: the encoder on the GPU (the WebGPU build, when the model's layers are there too; llama.cpp's default, and
// what its server's --no-mmproj-offload turns off); the CPU builds have no GPU backend.
// Returns null when the file is not a projector for this model (the reason is in the log).
EMSCRIPTEN_KEEPALIVE mtmd_context * hearth_mtmd_init(const llama_model * m, const char * path, int n_threads,
                                                     const char * marker, int use_gpu) {
  mtmd_context_params params = mtmd_context_params_default();
  params.media_marker = marker;
  params.use_gpu = use_gpu != 0;
  params.n_threads = n_threads;
  params.print_timings = false;
  params.warmup = false;  // a warm-up encode costs as much as a real one: the first image pays for the buffers instead
  try {
    return mtmd_init_from_file(path, m, params);
  } catch (...) {
    return nullptr;
  }
}
EMSCRIPTEN_KEEPALIVE void hearth_mtmd_free(mtmd_context * c) { mtmd_free(c); }
// 1 images, 2 audio, 4 M-RoPE positions (a chunk takes fewer positions than tokens).
EMSCRIPTEN_KEEPALIVE int hearth_mtmd_caps(const mtmd_context * c) {
  return (mtmd_support_vision(c) ? 1 : 0) | (mtmd_support_audio(c) ? 2 : 0) | (mtmd_decode_use_mrope(c) ? 4 : 0);
}
// The text that stands for one image or audio clip in a prompt (mtmd_tokenize puts the media chunks there).
EMSCRIPTEN_KEEPALIVE const char * hearth_mtmd_marker(const mtmd_context * c) { return mtmd_get_marker(c); }

// A bitmap from an encoded file: images through stb_image (PNG, JPEG, GIF, BMP…), audio through miniaudio (WAV, MP3,
// FLAC; told apart by their first bytes, resampled to the projector's rate). Null when the bytes do not decode.
EMSCRIPTEN_KEEPALIVE mtmd_bitmap * hearth_bitmap_from_file(const mtmd_context * c, const uint8_t * buf, size_t len) {
  try {
    return mtmd_helper_bitmap_init_from_buf(c, buf, len, false, mtmd_helper_init_opt_default()).bitmap;
  } catch (...) {
    return nullptr;
  }
}
// What a bitmap is: out = {nx, ny, is_audio}. Audio: nx is the number of samples.
EMSCRIPTEN_KEEPALIVE void hearth_bitmap_info(const mtmd_bitmap * b, int32_t * out) {
  out[0] = (int32_t) mtmd_bitmap_get_nx(b);
  out[1] = (int32_t) mtmd_bitmap_get_ny(b);
  out[2] = mtmd_bitmap_is_audio(b) ? 1 : 0;
}
// The bitmap's id names its chunks (the cache matches media by it): the hash of the media's bytes.
EMSCRIPTEN_KEEPALIVE void hearth_bitmap_set_id(mtmd_bitmap * b, const char * id) { mtmd_bitmap_set_id(b, id); }
EMSCRIPTEN_KEEPALIVE void hearth_bitmap_free(mtmd_bitmap * b) { mtmd_bitmap_free(b); }

// Splits a prompt at its markers into text and media chunks (one marker per bitmap, in order). The media chunks are
// preprocessed here (resized, sliced); *status: 0 ok, 1 markers and bitmaps do not match, 2 preprocessing failed.
EMSCRIPTEN_KEEPALIVE mtmd_input_chunks * hearth_mtmd_tokenize(const mtmd_context * c, const char * text, int len,
                                                              int add_special, const mtmd_bitmap ** bitmaps, int n,
                                                              int32_t * status) {
  mtmd_input_chunks * chunks = mtmd_input_chunks_init();
  mtmd_input_text input{text, (size_t) len, add_special != 0, true};
  try {
    *status = mtmd_tokenize(c, chunks, &input, bitmaps, (size_t) n);
  } catch (...) {
    *status = 2;
  }
  if (*status != 0) {
    mtmd_input_chunks_free(chunks);
    return nullptr;
  }
  return chunks;
}
EMSCRIPTEN_KEEPALIVE int hearth_chunks_size(const mtmd_input_chunks * cs) { return (int) mtmd_input_chunks_size(cs); }
EMSCRIPTEN_KEEPALIVE void hearth_chunks_free(mtmd_input_chunks * cs) { mtmd_input_chunks_free(cs); }
// A chunk of the list, copied: it outlives the list (the caller frees it with hearth_chunk_free).
EMSCRIPTEN_KEEPALIVE mtmd_input_chunk * hearth_chunk_copy(const mtmd_input_chunks * cs, int i) {
  return mtmd_input_chunk_copy(mtmd_input_chunks_get(cs, (size_t) i));
}
EMSCRIPTEN_KEEPALIVE void hearth_chunk_free(mtmd_input_chunk * c) { mtmd_input_chunk_free(c); }
// 0 text, 1 image, 2 audio.
EMSCRIPTEN_KEEPALIVE int hearth_chunk_type(const mtmd_input_chunk * c) { return (int) mtmd_input_chunk_get_type(c); }
EMSCRIPTEN_KEEPALIVE int hearth_chunk_n_tokens(const mtmd_input_chunk * c) { return (int) mtmd_input_chunk_get_n_tokens(c); }
// Positions the chunk takes: its tokens, or fewer for an M-RoPE image (max of its grid's width and height).
EMSCRIPTEN_KEEPALIVE int hearth_chunk_n_pos(const mtmd_input_chunk * c) { return (int) mtmd_input_chunk_get_n_pos(c); }
// A media chunk's id: its bitmap's (hearth_bitmap_set_id); empty for text.
EMSCRIPTEN_KEEPALIVE const char * hearth_chunk_id(const mtmd_input_chunk * c) {
  const char * id = mtmd_input_chunk_get_id(c);
  return id ? id : "";
}
// A text chunk's tokens (hearth_chunk_n_tokens of them).
EMSCRIPTEN_KEEPALIVE const llama_token * hearth_chunk_text(const mtmd_input_chunk * c) {
  size_t n = 0;
  return mtmd_input_chunk_get_tokens_text(c, &n);
}

// Runs the encoder over a media chunk; its embeddings are then at hearth_media_embd (n_tokens * n_embd_inp floats).
// The encoder computes on the context's own thread pool (wasm/patches/0026): the pthread build's fixed pool of
// workers is all held by it, and ggml's per-graph pool could not start its threads while this call blocks the worker.
EMSCRIPTEN_KEEPALIVE int hearth_media_encode(hearth_context * h, mtmd_context * c, const mtmd_input_chunk * chunk) {
  mtmd_set_threadpool(c, h->pool);
  try {
    return mtmd_encode_chunk(c, chunk);
  } catch (...) {
    return 1;
  }
}
EMSCRIPTEN_KEEPALIVE float * hearth_media_embd(mtmd_context * c) { return mtmd_get_output_embd(c); }
EMSCRIPTEN_KEEPALIVE int hearth_model_n_embd_inp(const llama_model * m) { return llama_model_n_embd_inp(m); }

// Decodes a media chunk's embeddings into sequence `seq` from position `n_past` (in batches of the context's n_batch;
// non-causal attention over the chunk where the model wants it, as Gemma 3 does). Returns 0, or llama_decode's status.
EMSCRIPTEN_KEEPALIVE int hearth_media_decode(hearth_context * h, mtmd_context * c, const mtmd_input_chunk * chunk,
                                             float * embd, int n_past, int seq) {
  llama_pos new_n_past = 0;
  int status =
      mtmd_helper_decode_image_chunk(c, h->ctx, chunk, embd, n_past, seq, h->n_batch, &new_n_past, nullptr, nullptr);
  idle(h->ctx);  // as hearth_decode
  return status;
}

}  // extern "C"
