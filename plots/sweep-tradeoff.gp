# sweep-tradeoff.gp: the detection study's trade-off — time to the first
# breaker open (ms) over health-check requests per second, one point per
# sweep point labelled with its varied values, one series per setup /
# phase: faster detection costs more checks.
load plotsdir.'/sweep-common.gp'

set title sprintf('Time to open against check overhead — %s%s', title_tail, \
    shown_note(ntrade, ntrade_shown)) font ',15'
set xlabel 'health-check requests per second'
set ylabel 'time to the first breaker open (ms)'
set offsets graph 0.06, graph 0.12, graph 0.1, graph 0.06
set xrange [0<*:*]
set yrange [0<*:*]

plot for [s = 1:ntrade_shown] datadir.'/tradeoff.dat' index (s - 1) using 1:2 \
        with points pt serpoint(s) ps 1.5 lc rgb sercolor(s) title trade_name[s], \
     for [s = 1:ntrade_shown] datadir.'/tradeoff.dat' index (s - 1) using 1:2:3 \
        with labels left offset 0.9, 0.5 font ',9' textcolor rgb sercolor(s) notitle
