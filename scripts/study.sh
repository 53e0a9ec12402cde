#!/bin/sh
# make study: the measured studies behind docs/chaos.md's detection and
# timeout tables, at time scale 1 (STUDY_SCALE), each a chaos sweep:
#   1. detection: each scenarios/detect-*.json over load.rate 50 and 0.5
#      (a busy and a sparse provider), every setup (passive, active, both);
#   2. the detection trade-off: detect-hang's active setup over its health
#      check's interval_ms × fall (T_detect against checks per second);
#   3. the timeout knee: timeout-knee over one per-attempt timeout for both
#      providers, from below the backup's latency to far above the
#      primary's p99.
# About 50 minutes at scale 1 (48 on 2026-12-04). Writes OUT/study-STAMP/study.md — each
# detection point's Detection table (from its report.md) and every sweep's
# table and conclusions — beside the sweeps under OUT/NAME/. Exit status 1
# when a sweep failed. STUDIES (detect tradeoff knee) picks parts; OUT
# (results) the results root.
set -eu
cd "$(dirname "$0")/.."

bin=${FAULTLINE_BIN:-bin}
out=${OUT:-results}
scale=${STUDY_SCALE:-1}
studies=${STUDIES:-detect tradeoff knee}
stamp=$(date -u +%Y%m%dT%H%M%SZ)
dir="$out/study-$stamp"
md="$dir/study.md"
status=0
mkdir -p "$dir"

{
	echo "# faultline study, $stamp"
	echo
	echo "Time scale $scale; machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the start."
	echo
} > "$md"

# sweep NAME LOG ARGS…: runs chaos sweep, its output into LOG and study.md;
# the sweep folder's path on stdout.
sweep() {
	name=$1
	log=$2
	shift 2
	# (called inside $(…): a failure is noted in a file, not a variable)
	if ! "$bin/chaos" sweep "scenarios/$name.json" --time-scale "$scale" --out "$out" \
		--quiet "$@" > "$log" 2>&1; then
		echo "$name" >> "$dir/failed"
	fi
	{
		echo '```'
		cat "$log"
		echo '```'
		echo
	} >> "$md"
	sed -n 's/^sweep: \([^ ]*\) .*/\1/p' "$log"
}

for study in $studies; do
	case $study in
	detect)
		echo "## Detection (load.rate 50 and 0.5 req/s)" >> "$md"
		echo >> "$md"
		for f in scenarios/detect-*.json; do
			name=$(basename "$f" .json)
			echo "== $name"
			echo "### $name" >> "$md"
			echo >> "$md"
			sw=$(sweep "$name" "$dir/$name.log" --vary load.rate=50,0.5)
			for point in "$sw"/p*; do
				[ -f "$point/report.md" ] || continue
				echo "#### $(basename "$point")" >> "$md"
				# The Detection section of the point's report, to the next section.
				sed -n '/^## Detection/,/^## [^D]/p' "$point/report.md" |
					sed '1d;$!b;/^## /d' >> "$md"
				echo >> "$md"
			done
		done
		;;
	tradeoff)
		echo "== detect-hang trade-off"
		echo "## The detection trade-off (detect-hang, active: health_check interval × fall)" >> "$md"
		echo >> "$md"
		hc=setups.active.config.providers.primary.health_check
		sweep detect-hang "$dir/tradeoff.log" --setup active \
			--vary "$hc.interval_ms=250,500,1000,2000" --vary "$hc.fall=1,2,3" > /dev/null
		;;
	knee)
		echo "== timeout-knee"
		echo "## The timeout knee (timeout-knee)" >> "$md"
		echo >> "$md"
		p=setups.gateway.config.providers
		sweep timeout-knee "$dir/knee.log" \
			--vary "$p.primary.timeout_ms+$p.backup.timeout_ms=300,600,1000,1500,2000,2500,3000,4000,8000" \
			> /dev/null
		;;
	*)
		echo "study: unknown study $study (detect, tradeoff, knee)" >&2
		exit 2
		;;
	esac
done
echo "Load at the end: $(cut -d' ' -f1-3 /proc/loadavg)." >> "$md"
if [ -f "$dir/failed" ]; then
	echo "study: a sweep failed: $(tr '\n' ' ' < "$dir/failed")(logs in $dir)" >&2
	status=1
fi
echo "study: $md"
exit "$status"
