/** The entry of the `cli/lvmh.mjs` bundle: run the CLI with the process's arguments. */
import process from "node:process";
import { main } from "./main.ts";

// exitCode, not exit(): a piped stdout still gets everything written.
process.exitCode = await main(process.argv.slice(2));
