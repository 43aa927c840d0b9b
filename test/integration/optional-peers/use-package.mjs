// Run by optional-peers.spec.ts with block-peers.mjs preloaded: loads the built package through
// `import` (ESM build) and uses it; prints a JSON report on stdout.
import { createRequire } from 'node:module';

const { usePackage } = createRequire(import.meta.url)('./use-package-steps.cjs');

try {
  const report = await usePackage({
    load: (specifier) => import(specifier),
    url: process.env.LOCK_NODE_URL,
  });
  process.stdout.write(JSON.stringify(report));
} catch (error) {
  console.error(error);
  process.exit(1);
}
