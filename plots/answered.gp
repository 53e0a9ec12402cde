# answered.gp: answered share (%) per window, one line per setup (mean over
# the runs), fault windows and kill intervals shaded and labelled. When the
# run had batch requests (answered_classes), the lines are the interactive
# requests' and each setup's batch requests get a thin dotted line.
load plotsdir.'/common.gp'

set terminal pngcairo size 1200,700 font 'Sans,12' noenhanced
set output outfile

set title sprintf('Answered share%s per %g s window — %s', \
    answered_classes ? ' (interactive; batch dotted)' : '', window_s, title_tail) font ',15'
set xlabel 'time after t0 (s)'
set ylabel 'answered (% of requests sent in the window)'
set xrange [0:duration_s]
set yrange [0:112]
set ytics 0, 20, 100 format '%g %%'
set key outside below center horizontal samplen 4 spacing 1.2 width 2 font ',12'
set lmargin 12
set bmargin (answered_classes ? 8 : 6)
fault_labels = 1
load plotsdir.'/faults.gp'

acol = answered_classes ? 6 : 4
plot for [i = 1:nsetups] datadir.'/answered-'.setup_name[i].'.dat' using 1:acol \
        with linespoints lw 2.5 dt setup_dash[(i - 1) % 8 + 1] pt setup_point[(i - 1) % 8 + 1] ps 1.1 \
        lc rgb scolor(i) title setup_name[i].(answered_classes ? ' interactive' : ''), \
    for [i = 1:(answered_classes ? nsetups : 0)] datadir.'/answered-'.setup_name[i].'.dat' \
        using 1:7 with lines lw 1.5 dt 3 lc rgb scolor(i) title setup_name[i].' batch', \
    keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb fault_color title (nfaultw ? 'fault window' : ''), \
    keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb kill_color title (nkills ? 'killed (provider, replica or Redis)' : '')
