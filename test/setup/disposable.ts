// jest runs each test file in a `vm` context, whose `Symbol` lacks Node 20's
// `Symbol.asyncDispose`; TypeScript's `await using` helper looks it up there. Node defines it
// as the registered symbol below (the same in every realm), so this restores exactly Node's.
const symbols = Symbol as { asyncDispose?: symbol; dispose?: symbol };
symbols.asyncDispose ??= Symbol.for('nodejs.asyncDispose');
symbols.dispose ??= Symbol.for('nodejs.dispose');
