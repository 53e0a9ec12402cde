# answered.gp: answered share (%) per window, one line per setup (mean over
# the runs), fault windows and kill intervals shaded and labelled.
load plotsdir.'/common.gp'

set terminal pngcairo size 1200,700 font 'Sans,12' noenhanced
set output outfile

set title sprintf('Answered share per %g s window — %s', window_s, title_tail) font ',15'
set xlabel 'time after t0 (s)'
set ylabel 'answered (% of requests sent in the window)'
set xrange [0:duration_s]
set yrange [0:112]
set ytics 0, 20, 100 format '%g %%'
set key outside below center horizontal samplen 4 spacing 1.2 width 2 font ',12'
set lmargin 12
set bmargin 6
fault_labels = 1
load plotsdir.'/faults.gp'

plot for [i = 1:nsetups] datadir.'/answered-'.setup_name[i].'.dat' using 1:4 \
        with linespoints lw 2.5 dt setup_dash[(i - 1) % 8 + 1] pt setup_point[(i - 1) % 8 + 1] ps 1.1 \
        lc rgb scolor(i) title setup_name[i], \
    keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb fault_color title (nfaultw ? 'fault window' : ''), \
    keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb kill_color title (nkills ? 'provider killed' : '')
