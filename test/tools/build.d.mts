/** test/tools/build.mjs: whether `root`'s dist/ was built after the newest of its sources changed (default: this clone). */
export function isBuildFresh(root?: string): boolean;
