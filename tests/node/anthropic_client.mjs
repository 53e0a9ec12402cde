// anthropic_client.mjs: the official @anthropic-ai/sdk npm package as a
// client of an Anthropic-style endpoint (mockprov's anthropic dialect),
// for the mockprov_anthropic integration tests.
//
//   node tests/node/anthropic_client.mjs BASE_URL MODEL [--stream-only]
//   (or FAULTLINE_BASE_URL / FAULTLINE_MODEL in the environment)
//
// BASE_URL is the server's root (http://HOST:PORT): the SDK adds
// /v1/messages. It makes one messages.create (unless --stream-only) and
// one with stream: true (iterating the events, joining the text of their
// text_delta deltas), then prints one JSON line:
//   {"nonstream": TEXT|null, "stream": TEXT, "events": N, "types": [EVENT TYPES],
//    "stop_reason": null|"end_turn"|…, "nonstream_error": null|{…},
//    "stream_error": null|{"name","message","status","type"}}
// "stream" holds the text received before an error. It exits 0 when both
// requests ended well, 1 when either raised (a stream that breaks must
// raise: that is what the tests check), 2 on bad usage.
//
// The package is loaded from $FAULTLINE_NODE_PREFIX/node_modules (sdk.mjs).
import { args, describe, load } from './sdk.mjs';

const { streamOnly, baseURL, model, prefix } = args('anthropic_client.mjs');
const Anthropic = load(prefix, '@anthropic-ai/sdk', 'Anthropic');
const client = new Anthropic({ baseURL, apiKey: 'faultline-test', maxRetries: 0, timeout: 15000 });
const messages = [{ role: 'user', content: 'Say something.' }];

const result = {
	nonstream: null, stream: '', events: 0, types: [], stop_reason: null,
	nonstream_error: null, stream_error: null,
};

if (!streamOnly) {
	try {
		const r = await client.messages.create({ model, max_tokens: 1024, messages });
		result.nonstream = r.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
		result.stop_reason = r.stop_reason;
	} catch (e) {
		result.nonstream_error = describe(e);
	}
}

try {
	const stream = await client.messages.create({ model, max_tokens: 1024, messages, stream: true });
	for await (const ev of stream) {
		result.events++;
		result.types.push(ev.type);
		if (ev.type === 'content_block_delta' && ev.delta?.type === 'text_delta')
			result.stream += ev.delta.text;
	}
} catch (e) {
	result.stream_error = describe(e);
}

console.log(JSON.stringify(result));
process.exit(result.nonstream_error || result.stream_error ? 1 : 0);
