# Stands in for emscripten's emdawnwebgpu port, which llama.cpp's CMake asks for when it builds ggml-webgpu
# (EMDAWNWEBGPU_DIR/emdawnwebgpu.port.py) and which emscripten would download from the internet. This one only puts
# webgpu.h on the include path (HEARTH_WEBGPU_INCLUDE, set by wasm/build.mjs: sid's libwebgpu-dawn-dev, see
# scripts/debian-files.mjs); the implementation is wasm/webgpu/library_webgpu.js, which wasm/build.mjs links.
import os


def get(ports, settings, shared):  # noqa: U100
    return []


def clear(ports, settings, shared):  # noqa: U100
    pass


def show():
    return 'emdawnwebgpu stand-in (webgpu.h from Debian; implementation: wasm/webgpu/library_webgpu.js)'


def process_args(ports):  # noqa: U100
    include = os.environ.get('HEARTH_WEBGPU_INCLUDE')
    if not include:
        raise Exception('HEARTH_WEBGPU_INCLUDE is not set: build through wasm/build.mjs')
    return ['-I' + include]
