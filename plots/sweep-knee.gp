# sweep-knee.gp: completion against duplicate work — answered share (%)
# over duplicate share (%), one point per sweep point labelled with its
# varied values, one series per setup (of knee_phase) or per setup /
# phase; each series' Pareto frontier as a dashed line, its knee circled
# and labelled (runner/knee.h: the first frontier point whose next step
# costs more than `exchange` points of duplicates per point answered).
load plotsdir.'/sweep-common.gp'

set title sprintf("Completion against duplicate work%s — %s%s\nknee: the first frontier point whose next step costs more than %g duplicate points per point answered", \
    strlen(knee_phase) ? ' ('.knee_phase.')' : '', title_tail, shown_note(nknee, nknee_shown), exchange) font ',15'
set xlabel 'duplicate share of upstream attempts (%)'
set ylabel 'answered share (%)'
set format x '%g %%'
set format y '%g %%'
set offsets graph 0.06, graph 0.12, graph 0.1, graph 0.06
set xrange [-0.5<*:*]
set yrange [0<*:*<103]
knee_color = '#d62728'

plot for [s = 1:nknee_shown] datadir.'/knee-frontier.dat' index (s - 1) using ($1 * 100):($2 * 100) \
        with lines lw 1.5 dt 2 lc rgb sercolor(s) notitle, \
     for [s = 1:nknee_shown] datadir.'/knee.dat' index (s - 1) using ($1 * 100):($2 * 100) \
        with points pt serpoint(s) ps 1.5 lc rgb sercolor(s) title knee_name[s], \
     for [s = 1:nknee_shown] datadir.'/knee.dat' index (s - 1) using ($1 * 100):($2 * 100):3 \
        with labels left offset 0.9, 0.5 font ',9' textcolor rgb sercolor(s) notitle, \
     datadir.'/knee-mark.dat' using ($1 * 100):($4 <= nknee_shown ? $2 * 100 : NaN) \
        with points pt 6 ps 3.5 lw 2.5 lc rgb knee_color title 'knee', \
     datadir.'/knee-mark.dat' using ($1 * 100):($4 <= nknee_shown ? $2 * 100 : NaN):3 \
        with labels left offset 1.6, -1.2 font ',11' textcolor rgb knee_color notitle
