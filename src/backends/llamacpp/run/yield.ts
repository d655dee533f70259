// Lets the worker's event loop run between decode steps, so aborts and new requests get in. setTimeout(0) is
// clamped to 4 ms after a few nested calls (a quarter of a decode step on a small model); a MessageChannel
// round trip is not. Node has setImmediate.
let port: MessagePort | null = null;
const waiting: Array<() => void> = [];

export function yieldToEventLoop(): Promise<void> {
  if (typeof setImmediate === 'function') return new Promise((resolve) => setImmediate(resolve));
  if (!port) {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => waiting.shift()?.();
    port = channel.port2;
  }
  return new Promise((resolve) => {
    waiting.push(resolve);
    port!.postMessage(null);
  });
}
