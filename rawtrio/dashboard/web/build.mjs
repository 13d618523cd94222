// Builds the dashboard's assets: src/ → ../static/ (index.html + assets/app-HASH.{js,css}).
//
// `node build.mjs [--outdir DIR]`. The output is a pure function of the sources, the
// lockfile's packages and this script (esbuild is deterministic; no timestamps, no absolute
// paths), so tests/dashboard_browser/test_assets.py can rebuild into a temporary folder and
// compare it byte for byte with what is committed in ../static/.
import * as esbuild from "esbuild";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const at = args.indexOf("--outdir");
const outdir = at >= 0 ? args[at + 1] : join(here, "..", "static");

rmSync(join(outdir, "assets"), { recursive: true, force: true });
mkdirSync(join(outdir, "assets"), { recursive: true });

const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { app: "src/main.js" },
  bundle: true,
  format: "esm",
  target: ["chrome110", "firefox115", "safari16"],
  minify: true,
  legalComments: "linked",
  sourcemap: false,
  outdir: join(outdir, "assets"),
  entryNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  metafile: true,
  logLevel: "warning",
});

let js = "";
let css = "";
for (const file of Object.keys(result.metafile.outputs)) {
  const name = relative(join(outdir, "assets"), join(here, file));
  if (name.endsWith(".js")) js = name;
  else if (name.endsWith(".css")) css = name;
}
if (!js || !css) throw new Error(`build made no js or css: ${Object.keys(result.metafile.outputs)}`);

// No inline script or style anywhere: the server's CSP is script-src 'self'; style-src 'self'.
const page = readFileSync(join(here, "src", "index.html"), "utf8")
  .replace("%APP_JS%", `/assets/${js}`)
  .replace("%APP_CSS%", `/assets/${css}`);
writeFileSync(join(outdir, "index.html"), page);
console.log(`built ${outdir}: assets/${js}, assets/${css}`);
