// Milliseconds for timings: performance.now() where the platform has it (workers, Node), else the wall clock.
export const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());
