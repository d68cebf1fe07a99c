/** A flag or argument that makes no sense: `main.ts` turns it into one line and exit 2. */
export class UsageError extends Error {}
