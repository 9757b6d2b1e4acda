// Nothing at a path is often an answer, not a failure (a group never made, a
// file not written yet). Only that case is turned into a value: any other
// error (no permission, an I/O error) still fails whoever asked.

/** A rejection handler: `fallback` when nothing is at the path, the error again otherwise. */
export function whenAbsent<T>(fallback: T): (err: NodeJS.ErrnoException) => T {
  return (err) => {
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR') return fallback;
    throw err;
  };
}
