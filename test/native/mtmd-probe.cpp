// Native reference for test/media-native.test.ts: llama.cpp's own libmtmd, built for this machine (scripts/build-server.mjs),
// runs a prompt with one image or audio clip and prints, as JSON, the media chunk's embeddings and the logits after
// the prompt's last token. The test runs the same steps through Hearth's wasm build and compares.
// Usage: mtmd-probe <model.gguf> <mmproj.gguf> <media file> <prompt with one <__media__> marker> <threads>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "llama.h"
#include "mtmd-helper.h"
#include "mtmd.h"

static void quiet(ggml_log_level, const char *, void *) {}

static void print_floats(const char * name, const float * v, size_t n) {
  printf("\"%s\":[", name);
  for (size_t i = 0; i < n; i++) printf(i ? ",%.7g" : "%.7g", v[i]);
  printf("]");
}

int main(int argc, char ** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s model mmproj media prompt threads\n", argv[0]);
    return 2;
  }
  const int threads = std::stoi(argv[5]);
  llama_log_set(quiet, nullptr);
  mtmd_helper_log_set(quiet, nullptr);
  llama_backend_init();

  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  llama_model * model = llama_model_load_from_file(argv[1], mp);
  if (!model) return fprintf(stderr, "model did not load\n"), 1;
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 2048;
  cp.n_batch = cp.n_ubatch = 512;
  cp.n_threads = cp.n_threads_batch = threads;
  cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
  cp.kv_unified = true;
  llama_context * ctx = llama_init_from_model(model, cp);

  mtmd_context_params mcp = mtmd_context_params_default();
  mcp.use_gpu = false;
  mcp.n_threads = threads;
  mcp.print_timings = false;
  mcp.warmup = false;
  mtmd_context * mctx = mtmd_init_from_file(argv[2], model, mcp);
  if (!mctx) return fprintf(stderr, "projector did not load\n"), 1;

  mtmd_helper_bitmap_wrapper bw = mtmd_helper_bitmap_init_from_file(mctx, argv[3], false, mtmd_helper_init_opt_default());
  if (!bw.bitmap) return fprintf(stderr, "media did not decode\n"), 1;
  mtmd_input_chunks * chunks = mtmd_input_chunks_init();
  const std::string prompt = argv[4];
  mtmd_input_text text{prompt.c_str(), prompt.size(), true, true};
  const mtmd_bitmap * bitmaps[] = {bw.bitmap};
  if (mtmd_tokenize(mctx, chunks, &text, bitmaps, 1) != 0) return fprintf(stderr, "tokenize failed\n"), 1;

  printf("{");
  llama_pos n_past = 0;
  double encode_ms = 0;
  size_t n = mtmd_input_chunks_size(chunks);
  bool printed = false;
  for (size_t i = 0; i < n; i++) {
    const mtmd_input_chunk * chunk = mtmd_input_chunks_get(chunks, i);
    llama_pos next = n_past;
    if (mtmd_input_chunk_get_type(chunk) == MTMD_INPUT_CHUNK_TYPE_TEXT) {
      if (mtmd_helper_eval_chunk_single(mctx, ctx, chunk, n_past, 0, 512, i + 1 == n, &next) != 0) return 1;
    } else {
      auto t0 = std::chrono::steady_clock::now();
      if (mtmd_encode_chunk(mctx, chunk) != 0) return fprintf(stderr, "encode failed\n"), 1;
      encode_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      float * embd = mtmd_get_output_embd(mctx);
      if (!printed) {
        print_floats("embd", embd, mtmd_input_chunk_get_n_tokens(chunk) * (size_t) llama_model_n_embd_inp(model));
        printf(",");
        printed = true;
      }
      if (mtmd_helper_decode_image_chunk(mctx, ctx, chunk, embd, n_past, 0, 512, &next, nullptr, nullptr) != 0) return 1;
    }
    n_past = next;
  }
  print_floats("logits", llama_get_logits_ith(ctx, -1), llama_vocab_n_tokens(llama_model_get_vocab(model)));
  printf(",\"n_past\":%d,\"encode_ms\":%.3f}\n", n_past, encode_ms);
  return 0;
}
