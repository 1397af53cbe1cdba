// Build a JavaScript tool into a component with the componentize-js API (no jco CLI needed).
// usage: node build.mjs SOURCE.js WIT_DIR WORLD OUT.wasm
// Run with NODE_PATH unset from a directory whose node_modules has the pinned packages
// (../build.sh installs them from package-lock.json with `npm ci`).
import { componentize } from '@bytecodealliance/componentize-js';
import { writeFile } from 'node:fs/promises';

const [sourcePath, witPath, worldName, out] = process.argv.slice(2);
if (!out) {
  console.error('usage: node build.mjs SOURCE.js WIT_DIR WORLD OUT.wasm');
  process.exit(2);
}
const { component } = await componentize({
  sourcePath,
  witPath,
  worldName,
  // Only stdio stays: uncaught errors and console.error reach stderr, which the host captures
  // and quotes in error results. No clocks, random or HTTP: the tool needs none of them.
  disableFeatures: ['random', 'clocks', 'http', 'fetch-event'],
});
await writeFile(out, component);
