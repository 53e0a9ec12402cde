# faults.gp: shades every fault window and kill → restart interval (from
# meta.gp) behind the next plots; with fault_labels = 1 also names each at
# the top of the plot area, on the row chaos plot chose (fault_row: labels
# near one another get rows of their own).
do for [i = 1:nfaults] {
    set object 50 + i rect from first fault_from[i], graph 0 to first fault_to[i], graph 1 \
        behind fillcolor rgb (fault_kill[i] ? kill_color : fault_color) fillstyle solid 1.0 noborder
    if (exists('fault_labels') && fault_labels) {
        set label 50 + i fault_label[i] at first (fault_from[i] + fault_to[i]) / 2, \
            graph 0.965 - 0.045 * fault_row[i] center front font ',11' textcolor rgb '#7a1f1f'
    }
}
