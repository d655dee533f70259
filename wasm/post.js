// Appended to every build's glue (--post-js, wasm/build.mjs), inside the module's factory, where emscripten's own names
// are in scope. A threaded module stays alive after it is dropped — a module that trapped and was replaced by a fresh
// one, or an engine ended in Node (NodeEngine.terminate) — and with it its whole heap (4 GiB, 16 GiB in memory64),
// held by two things: its pthread workers, which share the heap, and the main thread's wait for its mailbox
// (Atomics.waitAsync on the heap, re-armed each time it wakes). Module.hearthEndThreads ends both. The single-thread
// builds have neither.
Module.hearthEndThreads = () => {
  if (typeof PThread === 'undefined') return;
  PThread.terminateAllThreads();
  // Wake the wait one last time without arming it again; nothing then refers to the module.
  __emscripten_thread_mailbox_await = () => {};
  Atomics.notify(new Int32Array(wasmMemory.buffer), Number(_pthread_self()) / 4);
};
