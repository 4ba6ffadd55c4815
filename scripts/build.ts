/** Build the island bundle `static/client.js` (`deno task build`); the daemon also rebuilds it when stale. */
import { build } from "../lib/bundle.ts";

const { bytes, ms } = await build();
console.log(`static/client.js: ${(bytes / 1024).toFixed(1)} KiB in ${ms} ms`);
