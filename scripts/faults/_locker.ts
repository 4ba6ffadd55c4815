/**
 * Another process holding the database: opens the file with node:sqlite, takes `BEGIN EXCLUSIVE`, prints
 * "locked", and keeps the lock until its stdin closes; then rolls back and prints "released".
 * Args: dbPath
 */
import { DatabaseSync } from "node:sqlite";

const db = new DatabaseSync(Deno.args[0]);
db.exec("PRAGMA busy_timeout=30000");
db.exec("BEGIN EXCLUSIVE");
console.log("locked");
for await (const _ of Deno.stdin.readable) { /* hold until the harness closes our stdin */ }
db.exec("ROLLBACK");
db.close();
console.log("released");
