# sweep-common.gp: loaded first by the sweep's scripts (sweep-figure.gp,
# sweep-knee.gp, sweep-tradeoff.gp). The house style of common.gp (which
# loads DATADIR/meta.gp, written by chaos plot SWEEP_DIR), and what the
# sweep's plots share: a colour, dash and point type per series, and how a
# title says a plot shows only the first max_series series.
load plotsdir.'/common.gp'

set terminal pngcairo size 1200, 750 font 'Sans,12' noenhanced
set output outfile

array sweep_color[12] = ['#1f77b4', '#d95f02', '#1b9e77', '#7570b3', '#e7298a', '#66a61e', \
    '#a6761d', '#444444', '#17becf', '#bcbd22', '#8c564b', '#e377c2']
sercolor(i) = sweep_color[(i - 1) % 12 + 1]
serdash(i) = setup_dash[(i - 1) % 8 + 1]
serpoint(i) = setup_point[(i - 1) % 8 + 1]
# ' (first 12 of 15 series)' when a plot cannot show them all.
shown_note(n, shown) = (shown < n ? sprintf(' (first %d of %d series)', shown, n) : '')
isnum(v) = (v == v)

set key outside below center horizontal samplen 3 spacing 1.2 width 2 font ',11'
set bmargin 7
