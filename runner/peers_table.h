/*
 * peers_table: `chaos peers-table`, one markdown comparison of several
 * results stamps — the same outages replayed through faultline's own
 * setups and through other gateways (peers/, docs/peers.md) — built from
 * each stamp's summary.json alone.
 */
#ifndef FAULTLINE_RUNNER_PEERS_TABLE_H
#define FAULTLINE_RUNNER_PEERS_TABLE_H

/*
 * `chaos peers-table [--out FILE] [--title TEXT] [--note TEXT] STAMP_DIR…`
 * (argv[1] is "peers-table"): per scenario, phase and setup, the answered share,
 * latency percentiles, upstream requests per answer, fallback share and
 * the setup's stop time, and for streams what the client got. Stamps of
 * one scenario are merged into one table, in the order given. Writes the
 * markdown to FILE (through FILE.tmp and a rename) or stdout. Returns the
 * exit status: 0, 1 when FILE cannot be written, 2 for a bad command line
 * or a stamp without a readable summary.json.
 */
int peers_table_main(int argc, char **argv);

#endif
