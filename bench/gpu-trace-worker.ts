// The GPU engine's worker, traced (npm run bench -- webgpu --trace, in Firefox): loaded by importScripts before the
// engine's own worker script (bench/page.ts's traceGpu swaps the page's Worker for one that does so), it wraps the
// worker's WebGPU classes with test/webgpu/gpu-trace.ts and answers "take" on a BroadcastChannel with what it counted
// since the last take. Built as a classic script by bench/browser.ts.
import { takeTrace, traceWebGpu } from '../test/webgpu/gpu-trace.ts';

traceWebGpu();
const channel = new BroadcastChannel('hearth-gpu-trace');
channel.onmessage = (e: MessageEvent) => {
  if (e.data === 'take') channel.postMessage(takeTrace());
};
