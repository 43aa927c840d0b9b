// Preload (`node --import`): the optional peers cannot be resolved by `import` (the hooks) nor
// by require() (block-peers.cjs: a lazy require through createRequire must fail too).
import { createRequire, register } from 'node:module';

register('./block-peers-hooks.mjs', import.meta.url);
createRequire(import.meta.url)('./block-peers.cjs');
