// Appended to every build's glue (--post-js, wasm/build.mjs), inside the module's factory where PThread is in scope.
// A threaded module's pthread workers share its heap and keep it alive after the module itself is dropped: a module
// that trapped and was replaced by a fresh one, or an engine ended in Node (NodeEngine.terminate), would otherwise
// hold up to its whole heap (4 GiB, 16 GiB in memory64) until the process exits. The single-thread builds have none.
Module.hearthEndThreads = () => {
  if (typeof PThread !== 'undefined') PThread.terminateAllThreads();
};
