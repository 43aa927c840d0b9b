import { defineConfig } from 'tsup';
import entries from './tsup.config';

/**
 * The adapter contract (issue 26), `nestjs-redlock/adapters`: its own bundle of the transport
 * port, the protocol and the adapters, built after the other entries (package.json `build`) and
 * apart from them. Built with them, the declarations they share (the node port, the adapters'
 * classes) would go to a shared chunk file the package does not ship; apart, each entry's
 * declarations stand alone. Not in parallel either: each build's clean removes every `.d.ts`.
 * Its errors are a copy of the core's, branded (lib/core/errors.ts), so that the core's
 * `instanceof` knows either copy.
 */
export default defineConfig({
  ...(entries as object),
  entry: { 'adapters/index': 'lib/adapters/index.ts' },
  // dist/ was cleaned by the first build; this one only adds dist/adapters/.
  clean: false,
});
