// Run by optional-peers.spec.ts with block-peers.cjs preloaded: loads the built package through
// `require` (CommonJS build) and uses it; prints a JSON report on stdout.
'use strict';
const { usePackage } = require('./use-package-steps.cjs');

usePackage({
  load: async (specifier) => require(specifier),
  url: process.env.LOCK_NODE_URL,
}).then(
  (report) => process.stdout.write(JSON.stringify(report)),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
