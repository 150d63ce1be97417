// Starts a gateway thread (gateway-thread.ts). Plain JavaScript because a
// worker thread does not inherit a TypeScript loader from every parent
// (jest's, for one): this registers tsx, then loads it.
import { register } from 'tsx/esm/api';

register();
await import('./gateway-thread.ts');
