/**
 * pi's session file, before the bridge opens it again: a worker killed mid-write can leave its last line
 * half-written, without a newline. pi 0.73.1 skips that line but appends its next entry to it, so the entry
 * is lost on the following load (and with it the history before, the leaf's parent missing); 1.6.0 repairs it
 * itself. Ending the file with a newline first makes both keep everything but the torn line.
 */
import fs from "node:fs";

/**
 * End `file` with a newline when it does not.
 * @returns true when a newline was added.
 */
export function repairLastLine(file) {
  const fd = fs.openSync(file, "r+");
  try {
    const size = fs.fstatSync(fd).size;
    if (size === 0) return false;
    const last = new Uint8Array(1);
    fs.readSync(fd, last, 0, 1, size - 1);
    if (last[0] === 0x0a) return false;
    fs.writeSync(fd, new Uint8Array([0x0a]), 0, 1, size);
    return true;
  } finally {
    fs.closeSync(fd);
  }
}
