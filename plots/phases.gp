# phases.gp: p50, p95 and p99 of ok requests' latency per phase (mean over
# the runs), one panel a percentile, one bar a setup, labelled in ms.
load plotsdir.'/common.gp'

set terminal pngcairo size 1200, 700 font 'Sans,12' noenhanced
set output outfile

bw = 0.8 / nsetups
xpos(ph, st) = ph + (st - (nsetups + 1) / 2.0) * bw
set boxwidth bw * 0.92 absolute
set style fill solid 0.9 border lc rgb '#333333'
set xrange [0.45:nphases + 0.55]
set xtics () scale 0 font ',12'
do for [i = 1:nphases] { set xtics add (phase_name[i] i) }
set grid noxtics ytics
if (ph_log) {
    set logscale y
    set yrange [ph_lo:ph_hi]
    set ylabel 'latency (ms, log)'
} else {
    set yrange [0:ph_hi]
    set ylabel 'latency (ms)'
}
set xlabel 'phase'
# One legend for the three panels, on one line under the title: a swatch
# and a name per setup (a key would be held to one panel's width).
unset key
char_w = 0.0072
legend_w = 0
do for [s = 1:nsetups] { legend_w = legend_w + (strlen(setup_name[s]) + 6) * char_w }
x = 0.5 - legend_w / 2
do for [s = 1:nsetups] {
    set object 200 + s rect center screen x + char_w, screen 0.9 size screen 0.018, screen 0.024 \
        fillcolor rgb scolor(s) fillstyle solid 0.9 border lc rgb '#333333' front
    set label 200 + s setup_name[s] at screen x + 3 * char_w, screen 0.9 left font ',12'
    x = x + (strlen(setup_name[s]) + 6) * char_w
}
label_of(v) = (v >= 100 ? sprintf('%.0f', v) : sprintf('%.3g', v))

array pct_name[3] = ['p50', 'p95', 'p99']
set multiplot layout 1, 3 margins 0.07, 0.98, 0.12, 0.8 spacing 0.06, 0 \
    title sprintf("ok requests' latency percentiles per phase — %s", title_tail) font ',15'
do for [k = 1:3] {
    set title pct_name[k] font ',14'
    if (k == 2) { do for [s = 1:nsetups] { unset label 200 + s; unset object 200 + s } }
    if (k > 1) { unset ylabel }
    col = 2 + k
    if (ph_none) {
        # No bar anywhere: gnuplot 5.4 crashes on a labels plot with no point.
        plot for [s = 1:nsetups] datadir.'/phases.dat' \
                using (xpos($1, s)):(ph_log ? ph_lo * 1.15 : ph_hi * 0.015):($2 == s ? 'no ok request' : '') \
                with labels rotate by 90 left font ',9' textcolor rgb '#555555' notitle
    } else {
        plot for [s = 1:nsetups] datadir.'/phases.dat' using (xpos($1, s)):($2 == s ? column(col) : NaN) \
                with boxes lc rgb scolor(s) notitle, \
             for [s = 1:nsetups] datadir.'/phases.dat' \
                using (xpos($1, s)):($2 == s ? column(col) : NaN):(label_of(column(col))) \
                with labels rotate by 90 left offset 0, 0.4 font ',9' notitle, \
             for [s = 1:nsetups] datadir.'/phases.dat' \
                using (xpos($1, s)):(ph_log ? ph_lo * 1.15 : ph_hi * 0.015):($2 == s && $6 == 0 ? 'no ok request' : '') \
                with labels rotate by 90 left font ',9' textcolor rgb '#555555' notitle
    }
}
unset multiplot
