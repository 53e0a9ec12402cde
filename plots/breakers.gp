# breakers.gp: each gateway setup's breaker state over its first run, one
# step line per target (provider/model), from closed at t0 to the end.
load plotsdir.'/common.gp'

npanels = (brk_panels > 0 ? brk_panels : 1)
panel_h = 220
height = 130 + npanels * panel_h
set terminal pngcairo size 1200, (height < 700 ? 700 : height) font 'Sans,12' noenhanced
set output outfile

load plotsdir.'/faults.gp'
set xrange [0:duration_s]
set yrange [-0.35:2.6]
set ytics ('closed' 0, 'half-open' 1, 'open' 2)
set grid noxtics ytics
set ylabel 'breaker state'
set key outside right top vertical Left reverse samplen 3 spacing 1.3 font ',11'

bottom = 70.0 / (height < 700 ? 700 : height)
set multiplot layout npanels, 1 margins 0.1, 0.8, bottom, 0.875 spacing 0, 0.07 \
    title sprintf('Breaker state per target over time — %s', title_tail) font ',15'
if (brk_panels == 0) {
    set xlabel 'time after t0 (s)'
    set label 1 'no gateway setup in this stamp: no breakers to show' at graph 0.5, 0.5 center font ',14'
    plot NaN notitle
}
do for [i = 1:brk_panels] {
    f = datadir.'/breakers-'.brk_setup[i].'.dat'
    set title sprintf('%s (run %d)', brk_setup[i], brk_run[i]) font ',13'
    if (i == brk_panels) { set xlabel 'time after t0 (s)'; set format x '%g' } \
    else { unset xlabel; set format x '' }
    if (brk_ntargets[i] == 0) {
        set label 1 'no breaker transitions: every breaker stayed closed (or breakers are off)' \
            at graph 0.5, 0.62 center font ',13' textcolor rgb '#555555'
        plot NaN notitle, \
             keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb fault_color title (nfaultw ? 'fault window' : ''), \
             keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb kill_color title (nkills ? 'killed (provider, replica or Redis)' : '')
    } else {
        unset label 1
        # Lines of several targets are lifted apart a little, so none hides another.
        plot for [j = 1:brk_ntargets[i]] f index (j - 1) using 1:($2 + 0.07 * (j - 1)) \
                with steps lw 2.5 lc rgb pcolor(brk_color[brk_first[i] + j - 1]) \
                title brk_target[brk_first[i] + j - 1], \
             keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb fault_color title (nfaultw ? 'fault window' : ''), \
             keyentry with boxes fillstyle solid 1.0 noborder fillcolor rgb kill_color title (nkills ? 'killed (provider, replica or Redis)' : '')
    }
}
unset multiplot
