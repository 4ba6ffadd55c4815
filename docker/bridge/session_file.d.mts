/** End `file` with a newline when it does not; true when one was added. */
export function repairLastLine(file: string): boolean;
