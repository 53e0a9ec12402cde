/*
 * dockeys: every config key and every command-line flag is documented.
 * The keys come from the loaders' own tables (gw_config_sections,
 * mock_config_sections, scenario_sections, mix_sections), so a key added to
 * a table and not to its page fails here; the flags come from the
 * `struct option` arrays of each program's main.c (main.c is not linked
 * into the tests, so its source is read), checked against the program's
 * docs page and its man page. Run from the repository's top, like every
 * test; the pages are read from docs/ and man/.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cfg.h"
#include "gateway/config.h"
#include "loadgen/mix.h"
#include "mockprov/config.h"
#include "mockprov/fault.h"
#include "runner/scenario.h"

TestSuite(dockeys, .timeout = 10);

#define MAX_FLAGS 64

/* The whole file as a string; the test fails when it cannot be read. */
static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "rb");
	char *text;
	long len;

	cr_assert_not_null(fp, "cannot open %s (the tests run from the repository's top)", path);
	cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
	len = ftell(fp);
	cr_assert_geq(len, 0);
	rewind(fp);
	text = malloc((size_t)len + 1);
	cr_assert_not_null(text);
	cr_assert_eq(fread(text, 1, (size_t)len, fp), (size_t)len, "cannot read %s", path);
	text[len] = '\0';
	fclose(fp);
	return text;
}

/*
 * True when text holds `name` as a code span of its own: the backticks on
 * both sides keep `hedge.max` from being found inside `hedge.max_after_ms`.
 */
static bool documented(const char *text, const char *name)
{
	char needle[300];

	snprintf(needle, sizeof(needle), "`%.280s`", name);
	return strstr(text, needle) != NULL;
}

/* The dotted path of a key: "breaker.cooldown_ms", or the key alone at the top. */
static void key_path(const char *section, const char *key, char *out, size_t len)
{
	if (*section)
		snprintf(out, len, "%s.%s", section, key);
	else
		snprintf(out, len, "%s", key);
}

/*
 * Expects every key of every section, and every value of an enum key, in
 * page; returns how many keys were checked so a caller can tell an empty
 * table from a documented one.
 */
static size_t check_sections(const struct cfg_section *s, size_t n, const char *page)
{
	char *text = slurp(page);
	char path[256];
	size_t checked = 0;
	size_t i;
	size_t k;
	size_t c;

	for (i = 0; i < n; i++) {
		for (k = 0; k < s[i].nkeys; k++) {
			const struct cfg_key *key = &s[i].keys[k];

			key_path(s[i].path, key->name, path, sizeof(path));
			cr_expect(documented(text, path), "%s does not document `%s`", page, path);
			for (c = 0; key->type == CFG_ENUM && key->choices[c]; c++)
				cr_expect(documented(text, key->choices[c]),
					  "%s does not document `%s`, a value of `%s`", page,
					  key->choices[c], path);
			checked++;
		}
	}
	free(text);
	return checked;
}

/*
 * The long options of a main.c: each `{ "NAME", no_argument|
 * required_argument …` row of its struct option arrays. Returns how many
 * were stored in names (strdup'ed).
 */
static size_t source_flags(const char *main_c, char **names, size_t max)
{
	char *text = slurp(main_c);
	const char *p = text;
	size_t n = 0;

	while ((p = strstr(p, "{ \"")) != NULL) {
		const char *name = p + 3;
		const char *end = strchr(name, '"');

		p = name;
		if (!end)
			break;
		if (strncmp(end, "\", no_argument", 14) != 0 &&
		    strncmp(end, "\", required_argument", 20) != 0 &&
		    strncmp(end, "\", optional_argument", 20) != 0)
			continue;
		cr_assert_lt(n, max, "more than %d flags in %s", MAX_FLAGS, main_c);
		names[n++] = strndup(name, (size_t)(end - name));
	}
	free(text);
	return n;
}

/*
 * True when the mdoc page lists --NAME as an item of its options
 * (`.It Fl -NAME`, followed by its argument or the end of the line).
 */
static bool man_lists(const char *man, const char *name)
{
	char needle[128];
	const char *p = man;
	size_t len;

	snprintf(needle, sizeof(needle), ".It Fl -%s", name);
	len = strlen(needle);
	while ((p = strstr(p, needle)) != NULL) {
		p += len;
		if (*p == ' ' || *p == '\n')
			return true;
	}
	return false;
}

/*
 * Expects every flag of main_c in the docs page (as `--NAME`, alone or
 * with its argument: "`--seed N`") and as an item of the man page.
 * Returns how many flags there were.
 */
static size_t check_flags(const char *main_c, const char *page, const char *man_page)
{
	char *names[MAX_FLAGS];
	char *text = slurp(page);
	char *man = slurp(man_page);
	char needle[128];
	size_t n = source_flags(main_c, names, MAX_FLAGS);
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(needle, sizeof(needle), "`--%s", names[i]);
		cr_expect(strstr(text, needle), "%s does not document --%s (%s)", page, names[i],
			  main_c);
		cr_expect(man_lists(man, names[i]), "%s does not list --%s (%s) as `.It Fl -%s`",
			  man_page, names[i], main_c, names[i]);
		free(names[i]);
	}
	free(text);
	free(man);
	return n;
}

Test(dockeys, the_checks_can_fail)
{
	const char *text = "| `hedge.max_after_ms` | 1000 |\n.It Fl -seeds Ar N\n";

	cr_expect(documented(text, "hedge.max_after_ms"));
	cr_expect_not(documented(text, "hedge.max"), "a prefix of a documented key is not it");
	cr_expect_not(documented(text, "max_after_ms"), "nor is its last part alone");
	cr_expect_not(man_lists(text, "seed"), "--seeds is not --seed");
	cr_expect(man_lists(text, "seeds"));
}

Test(dockeys, gateway_config)
{
	size_t n;
	const struct cfg_section *s = gw_config_sections(&n);

	cr_assert_geq(n, 10);
	cr_expect_geq(check_sections(s, n, "docs/gateway-config.md"), 60);
}

Test(dockeys, mockprov_config)
{
	size_t n;
	const struct cfg_section *s = mock_config_sections(&n);
	char *text;
	int k;

	cr_assert_geq(n, 3);
	cr_expect_geq(check_sections(s, n, "docs/mockprov.md"), 20);
	text = slurp("docs/mockprov.md");
	for (k = 0; k < FAULT_NKINDS; k++)
		cr_expect(documented(text, fault_kind_name((enum fault_kind)k)),
			  "docs/mockprov.md does not document the fault kind `%s`",
			  fault_kind_name((enum fault_kind)k));
	free(text);
}

Test(dockeys, scenario_format)
{
	size_t n;
	const struct cfg_section *s = scenario_sections(&n);

	cr_assert_geq(n, 8);
	cr_expect_geq(check_sections(s, n, "docs/scenario-format.md"), 50);
}

Test(dockeys, mix_file)
{
	size_t n;
	const struct cfg_section *s = mix_sections(&n);

	cr_assert_geq(n, 3);
	cr_expect_geq(check_sections(s, n, "docs/loadgen.md"), 15);
}

Test(dockeys, gateway_flags)
{
	cr_expect_geq(check_flags("gateway/main.c", "docs/gateway.md", "man/faultline-gateway.1"), 7);
}

Test(dockeys, mockprov_flags)
{
	cr_expect_geq(check_flags("mockprov/main.c", "docs/mockprov.md", "man/faultline-mockprov.1"),
		      8);
}

Test(dockeys, loadgen_flags)
{
	cr_expect_geq(check_flags("loadgen/main.c", "docs/loadgen.md", "man/faultline-loadgen.1"), 28);
}

Test(dockeys, chaos_flags_and_commands)
{
	static const char *const commands[] = { "run", "sweep", "report", "gate", "compare",
						      "plot", "list" };
	char *text = slurp("docs/chaos.md");
	char *man = slurp("man/faultline-chaos.1");
	char needle[64];
	size_t i;

	cr_expect_geq(check_flags("runner/main.c", "docs/chaos.md", "man/faultline-chaos.1"), 8);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		snprintf(needle, sizeof(needle), "`chaos %s", commands[i]);
		cr_expect(strstr(text, needle), "docs/chaos.md does not document chaos %s",
			  commands[i]);
		snprintf(needle, sizeof(needle), ".It Cm %s", commands[i]);
		cr_expect(strstr(man, needle), "man/faultline-chaos.1 does not list the command %s",
			  commands[i]);
	}
	free(text);
	free(man);
}
