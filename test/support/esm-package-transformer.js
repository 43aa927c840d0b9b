// A jest transformer for the ESM-only packages the tests load (@nestjs/terminus 12 ships ESM
// only): jest 29 runs tests as CommonJS and cannot require an ES module, so these files are
// compiled to CommonJS with swc (already a dev dependency: tsup uses it), `import.meta.url`
// included. Node itself needs none of this (require(esm), Node >= 20.19).
'use strict';
const swc = require('@swc/core');

module.exports = {
  process(source, filename) {
    const { code, map } = swc.transformSync(source, {
      filename,
      swcrc: false,
      configFile: false,
      sourceMaps: true,
      module: { type: 'commonjs' },
      jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } },
    });
    return { code, map };
  },
};
