-- chat_post.lua: makes wrk POST one chat completion request (the body in
-- $FL_BENCH_REQUEST, or a one-message request for mock-small) and, at the
-- end, print its figures as "flbench_KEY VALUE" lines for bench/mockprov.sh.

wrk.method = "POST"
wrk.body = os.getenv("FL_BENCH_REQUEST")
	or '{"model":"mock-small","messages":[{"role":"user","content":"Say hello"}]}'
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
	local e = summary.errors
	local secs = summary.duration / 1e6
	local lines = {
		{ "requests", summary.requests },
		{ "duration_s", string.format("%.3f", secs) },
		{ "rps", string.format("%.1f", summary.requests / secs) },
		{ "bytes", summary.bytes },
		{ "p50_ms", string.format("%.3f", latency:percentile(50) / 1000) },
		{ "p99_ms", string.format("%.3f", latency:percentile(99) / 1000) },
		{ "max_ms", string.format("%.3f", latency.max / 1000) },
		{ "errors_connect", e.connect },
		{ "errors_read", e.read },
		{ "errors_write", e.write },
		{ "errors_status", e.status },
		{ "errors_timeout", e.timeout },
	}
	for _, kv in ipairs(lines) do
		io.write("flbench_", kv[1], " ", tostring(kv[2]), "\n")
	end
end
