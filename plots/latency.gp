# latency.gp: every request of each setup's first run as a point — x its
# intended send time, y its latency (log) — coloured by the provider that
# answered; failed requests as crosses. One panel per setup, one legend.
load plotsdir.'/common.gp'

panel_h = 250
height = 130 + nsetups * panel_h
set terminal pngcairo size 1200, (height < 700 ? 700 : height) font 'Sans,12' noenhanced
set output outfile

# Colours as 0xRRGGBB numbers for "lc rgb variable"; 0 in the data is "none".
hexrgb(s) = int('0x'.s[2:7])
rgb_of(i) = (i >= 1 ? hexrgb(pcolor(int(i))) : hexrgb(none_color))
clamp(y) = (y < lat_lo ? lat_lo : y)

load plotsdir.'/faults.gp'
set logscale y
set yrange [lat_lo:lat_hi]
set format y '%g'
set xrange [0:duration_s]
set ylabel 'latency (ms, log)'
set key at screen 0.805, screen 0.9 left top vertical Left reverse samplen 1.5 spacing 1.4 font ',11'

bottom = 70.0 / (height < 700 ? 700 : height)
set multiplot layout nsetups, 1 margins 0.08, 0.79, bottom, 0.885 spacing 0, 0.085 \
    title sprintf('Latency of every request over time — %s', title_tail) font ',15'
do for [i = 1:nsetups] {
    f = datadir.'/latency-'.setup_name[i].'.dat'
    set title (lat_run[i] ? sprintf('%s (run %d)', setup_name[i], lat_run[i]) \
                          : sprintf('%s: no completed run', setup_name[i])) font ',13'
    # The panels share the x axis: its numbers only under the last one.
    if (i == nsetups) { set xlabel 'intended send time after t0 (s)'; set format x '%g' } \
    else { unset xlabel; set format x '' }
    # One legend for all panels: drawn with the first, in the right margin.
    if (i == 1) { set key } else { unset key }
    plot f using 1:($4 == 0 ? clamp($2) : NaN):(rgb_of($3)) with points pt 2 ps 0.9 lw 1.5 lc rgb variable notitle, \
         f using 1:($4 == 1 ? clamp($2) : NaN):(rgb_of($3)) with points pt 7 ps 0.45 lc rgb variable notitle, \
         for [p = 1:nprov] keyentry with points pt 7 ps 1.6 lc rgb pcolor(p) title prov_name[p], \
         keyentry with points pt 7 ps 1.6 lc rgb none_color title 'none', \
         keyentry with points pt 7 ps 1.2 lc rgb '#000000' title 'ok (colour: provider)', \
         keyentry with points pt 2 ps 1.2 lc rgb '#000000' title 'failed', \
         keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb fault_color title (nfaultw ? 'fault window' : ''), \
         keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb kill_color title (nkills ? 'killed (provider, replica or Redis)' : '')
}
unset multiplot
