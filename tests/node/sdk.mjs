// sdk.mjs: what the SDK client scripts of tests/node share — the command
// line (BASE_URL MODEL [--stream-only], or FAULTLINE_BASE_URL and
// FAULTLINE_MODEL in the environment), an npm package loaded from
// $FAULTLINE_NODE_PREFIX/node_modules (where the Makefile's npm install
// --prefix put it: ESM imports ignore NODE_PATH, so it is resolved with
// createRequire from that prefix), and an SDK error described as JSON.
import { createRequire } from 'node:module';
import path from 'node:path';

// The command line, or exit 2 with the usage of script.
export function args(script) {
	const rest = process.argv.slice(2).filter((a) => !a.startsWith('--'));
	const a = {
		streamOnly: process.argv.includes('--stream-only'),
		baseURL: rest[0] || process.env.FAULTLINE_BASE_URL,
		model: rest[1] || process.env.FAULTLINE_MODEL,
		prefix: process.env.FAULTLINE_NODE_PREFIX,
	};
	if (!a.baseURL || !a.model || !a.prefix) {
		console.error(`usage: FAULTLINE_NODE_PREFIX=DIR node ${script} BASE_URL MODEL [--stream-only]`);
		process.exit(2);
	}
	return a;
}

// The package's client class (its named export, else its default).
export function load(prefix, name, cls) {
	const require = createRequire(path.join(path.resolve(prefix), 'package.json'));
	const mod = require(name);
	return mod[cls] || mod.default || mod;
}

// An SDK error as {name, message, code, type, status}.
export function describe(e) {
	return {
		name: e?.constructor?.name ?? String(e?.name),
		message: String(e?.message ?? e),
		code: e?.code ?? null,
		type: e?.type ?? e?.error?.error?.type ?? null,
		status: e?.status ?? null,
	};
}
