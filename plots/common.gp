# common.gp: loaded first by every plot script. Reads the stamp's variables
# (DATADIR/meta.gp, written by chaos plot) and sets the house style: the
# PNG terminal, fonts, grid, colours of setups and providers.
#
# Every script is run as
#   gnuplot -e "datadir='STAMP/plots/data'; plotsdir='plots'; outfile='NAME.png.tmp'" NAME.gp

load datadir.'/meta.gp'

# Setups (answered, phases) and providers (latency) get colours of their own.
array setup_color[8] = ['#1f77b4', '#d95f02', '#1b9e77', '#7570b3', '#e7298a', '#66a61e', '#a6761d', '#444444']
array setup_dash[8] = [1, 2, 4, 1, 2, 4, 1, 2]
array setup_point[8] = [7, 5, 9, 11, 13, 7, 5, 9]
array prov_color[8] = ['#1f77b4', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22']
scolor(i) = setup_color[(i - 1) % 8 + 1]
pcolor(i) = prov_color[(i - 1) % 8 + 1]
none_color = '#555555'
fault_color = '#fadcdc'
kill_color = '#d9e2f7'

# Strings are names, not markup: no enhanced text anywhere. NaN in the
# data is undefined: no point, and a break in a line.
set termoption noenhanced
set border lw 1.2
set grid xtics ytics lc rgb '#dddddd' lw 1 lt 1
set tics out nomirror

# How many of the shaded windows are kills, for the legends.
nkills = 0
do for [i = 1:nfaults] { nkills = nkills + fault_kill[i] }
nfaultw = nfaults - nkills
