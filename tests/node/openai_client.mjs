// openai_client.mjs: the official openai npm package as a client of an
// OpenAI-style endpoint (mockprov or the gateway), for the gateway_stream
// integration tests.
//
//   node tests/node/openai_client.mjs BASE_URL MODEL [--stream-only]
//   (or FAULTLINE_BASE_URL / FAULTLINE_MODEL in the environment)
//
// It makes one chat completion (unless --stream-only) and one streaming
// one (stream: true, iterating the chunks, joining their delta content),
// then prints one JSON line:
//   {"nonstream": CONTENT|null, "stream": CONTENT, "chunks": N,
//    "nonstream_error": null|{…}, "stream_error": null|{"name","message","code","type","status"}}
// "stream" holds the content received before an error. It exits 0 when
// both requests ended well, 1 when either raised (a stream that breaks
// must raise: that is what the test checks), 2 on bad usage.
//
// The package is loaded from $FAULTLINE_NODE_PREFIX/node_modules (sdk.mjs).
import { args, describe, load } from './sdk.mjs';

const { streamOnly, baseURL, model, prefix } = args('openai_client.mjs');
const OpenAI = load(prefix, 'openai', 'OpenAI');
const client = new OpenAI({ baseURL, apiKey: 'faultline-test', maxRetries: 0, timeout: 15000 });
const messages = [{ role: 'user', content: 'Say something.' }];

const result = { nonstream: null, stream: '', chunks: 0, nonstream_error: null, stream_error: null };

if (!streamOnly) {
	try {
		const r = await client.chat.completions.create({ model, messages });
		result.nonstream = r.choices[0].message.content;
	} catch (e) {
		result.nonstream_error = describe(e);
	}
}

try {
	const stream = await client.chat.completions.create({ model, messages, stream: true });
	for await (const chunk of stream) {
		result.chunks++;
		result.stream += chunk.choices?.[0]?.delta?.content ?? '';
	}
} catch (e) {
	result.stream_error = describe(e);
}

console.log(JSON.stringify(result));
process.exit(result.nonstream_error || result.stream_error ? 1 : 0);
