// Builds web/dist/: the dashboard's sources as they are (plain ES modules, no transpiling) plus
// uPlot's distribution files from node_modules, so that the running server needs no internet.
// Run with `npm run build` after `npm ci`.
import { cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(fileURLToPath(import.meta.url));
const dist = join(root, 'dist');
const uplot = join(root, 'node_modules', 'uplot', 'dist');

if (!existsSync(join(uplot, 'uPlot.esm.js'))) {
  console.error(`uPlot is missing in ${uplot}: run \`npm ci\` in web/ first`);
  process.exit(1);
}
rmSync(dist, { recursive: true, force: true });
mkdirSync(join(dist, 'vendor'), { recursive: true });
cpSync(join(root, 'src'), dist, { recursive: true });
cpSync(join(uplot, 'uPlot.esm.js'), join(dist, 'vendor', 'uPlot.esm.js'));
cpSync(join(uplot, 'uPlot.min.css'), join(dist, 'vendor', 'uPlot.min.css'));
writeFileSync(join(dist, 'build.json'), JSON.stringify({ built: new Date().toISOString() }) + '\n');
console.log(`dashboard built into ${dist}`);
