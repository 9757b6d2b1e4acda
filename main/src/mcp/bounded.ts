// Tool answers go into a model's context: long outputs (a command's stdout, a
// diff) are cut to a budget, and the cut says how much was left out.

/** `text` if it fits in `max` characters; else its start and a note of what was left out. */
export function bounded(text: string, max: number): { text: string; cut: boolean } {
  if (text.length <= max) return { text, cut: false };
  return { text: `${text.slice(0, max)}\n… (${text.length - max} more characters left out)`, cut: true };
}

/** The first `max` items, and how many were left out. */
export function firstItems<T>(items: readonly T[], max: number): { items: T[]; more: number } {
  return { items: items.slice(0, max), more: Math.max(0, items.length - max) };
}
