# Emscripten's own toolchain file sets CMAKE_SYSTEM_PROCESSOR to "x86", and ggml-cpu then falls back to its generic
# kernels ("Unknown CPU architecture") - four times slower than its wasm SIMD kernels. A -DCMAKE_SYSTEM_PROCESSOR on
# the command line is overwritten by that file, so we wrap it and set the processor after it has run.
# HEARTH_EMSCRIPTEN_ROOT comes from wasm/build.mjs (em-config EMSCRIPTEN_ROOT).
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES HEARTH_EMSCRIPTEN_ROOT)
set(EMSCRIPTEN_SYSTEM_PROCESSOR wasm32)
include("${HEARTH_EMSCRIPTEN_ROOT}/cmake/Modules/Platform/Emscripten.cmake")
set(CMAKE_SYSTEM_PROCESSOR wasm32)
