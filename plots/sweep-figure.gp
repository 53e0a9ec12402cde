# sweep-figure.gp: one figure of a sweep (fig, from 1: fig_name[fig], its
# columns fig_col[fig] and fig_col[fig] + 1 of series.dat) against the
# first varied value, one line per series (setup / phase and the other
# varied values), ± the stddev over the repeats as error bars when there
# were more than one. Run once per figure with -e "fig = N".
load plotsdir.'/sweep-common.gp'

c = int(fig_col[fig])
sc = fig_scale[fig]
unit = fig_unit[fig]
set title sprintf('%s against %s — %s%s', fig_title[fig], x_leaf, title_tail, \
    shown_note(nseries, nseries_shown)) font ',14'
set xlabel x_path
set ylabel fig_title[fig].(strlen(unit) ? ' ('.unit.')' : '')
if (unit eq '%') { set format y '%g %%' }
# Every figure is ≥ 0: autoscaled, but never below 0.
set yrange [0<*:*]

# Ticks at the varied values (a category axis names them).
set xtics () rotate by -30
do for [i = 1:nxval] { set xtics add (xval_label[i] xval[i]) }
if (x_log) { set logscale x }
if (!x_numeric) { set xrange [0.5:nxval + 0.5] } else { set offsets graph 0.04, graph 0.04, graph 0.08, graph 0.04 }

sd(v) = (isnum(v) ? v * sc : 0)
if (error_bars) {
    plot for [s = 1:nseries_shown] datadir.'/series.dat' index (s - 1) \
        using 1:(column(c) * sc):(sd(column(c + 1))) with yerrorlines lw 2 dt serdash(s) \
        pt serpoint(s) ps 1.2 lc rgb sercolor(s) title series_name[s]
} else {
    plot for [s = 1:nseries_shown] datadir.'/series.dat' index (s - 1) \
        using 1:(column(c) * sc) with linespoints lw 2 dt serdash(s) \
        pt serpoint(s) ps 1.2 lc rgb sercolor(s) title series_name[s]
}
