#!/usr/bin/env node
// The `cairn` command line: its TypeScript (bin/cairn.ts) run through tsx,
// as `npm start` runs the service, under the Node first on PATH (npm puts
// the project's Node 24 there for `npx cairn`), with compiled code kept
// between runs (compile-cache.mjs).
import './compile-cache.mjs';
import { register } from 'tsx/esm/api';

register();
await import('./cairn.ts');
