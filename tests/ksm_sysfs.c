// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_sysfs.c - /sys/kernel/mm/ksm input checking, as mainline 6.12's
 * *_store() functions do it: every writable file rejects what it cannot
 * parse or what is out of range, with the errno mainline returns, and keeps
 * its value; it accepts valid values and reads them back. Also the files
 * that refuse a change while KSM pages exist, pages_to_scan under the
 * scan-time advisor, and the read-only counters.
 *
 * Mainline's parsers, and so the errnos:
 *   kstrtouint, error -> EINVAL: run (also > 2), pages_to_scan,
 *	sleep_millisecs, stable_node_chains_prune_millisecs
 *   kstrtoul, error -> EINVAL: advisor_max_cpu, advisor_min_pages_to_scan,
 *	advisor_max_pages_to_scan, advisor_target_scan_time (also 0)
 *   kstrtoul, error as is (ERANGE on overflow): merge_across_nodes (> 1 EINVAL)
 *   kstrtoint, error as is (ERANGE on overflow): max_page_sharing (< 2 EINVAL)
 *   kstrtobool (first character only) -> EINVAL: use_zero_pages, smart_scan
 *   sysfs_streq "scan-time" / "none" -> EINVAL: advisor_mode
 * A write of zero bytes never reaches the store function: it returns 0 and
 * changes nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

struct bad {
	const char *in;
	int err;
};

struct knob {
	const char *name;
	/* Valid writes, each followed by what the file then reads. */
	const char *valid[8][2];
	struct bad bad[12];
};

#define HUGE "99999999999999999999"	/* > ULLONG_MAX */
#define NOT_NUMBERS \
	{ "abc", EINVAL }, { "\n", EINVAL }, { "12abc", EINVAL }, \
	{ " 5", EINVAL }, { "0x10", EINVAL }
#define UINT_BAD NOT_NUMBERS, { "-1", EINVAL }, { "4294967296", EINVAL }, \
	{ HUGE, EINVAL }
#define ULONG_BAD NOT_NUMBERS, { "-1", EINVAL }, \
	{ "18446744073709551616", EINVAL }, { HUGE, EINVAL }
#define BOOL_BAD { "abc", EINVAL }, { "\n", EINVAL }, { "2", EINVAL }, \
	{ "-1", EINVAL }, { "o", EINVAL }, { "x1", EINVAL }, { HUGE, EINVAL }
#define BOOL_VALID { "1", "1" }, { "0", "0" }, { "on", "1" }, { "off", "0" }, \
	{ "Y", "1" }, { "n", "0" }, { "10", "1" }

static const struct knob knobs[] = {
	{ "run", { { "1", "1" }, { "2", "2" }, { "0", "0" } },
	  { UINT_BAD, { "3", EINVAL } } },
	{ "pages_to_scan", { { "123", "123" }, { "0", "0" } }, { UINT_BAD } },
	{ "sleep_millisecs", { { "77", "77" }, { "4294967295", "4294967295" } },
	  { UINT_BAD } },
	{ "max_page_sharing", { { "2", "2" }, { "1000", "1000" } },
	  { NOT_NUMBERS, { "-1", EINVAL }, { "0", EINVAL }, { "1", EINVAL },
	    { "2147483648", ERANGE }, { HUGE, ERANGE } } },
	{ "merge_across_nodes", { { "0", "0" }, { "1", "1" } },
	  { NOT_NUMBERS, { "2", EINVAL }, { "-1", EINVAL }, { HUGE, ERANGE } } },
	{ "use_zero_pages", { BOOL_VALID }, { BOOL_BAD } },
	{ "smart_scan", { BOOL_VALID }, { BOOL_BAD } },
	{ "stable_node_chains_prune_millisecs", { { "1234", "1234" } },
	  { UINT_BAD } },
	{ "advisor_mode",
	  { { "scan-time", "none [scan-time]" }, { "none\n", "[none] scan-time" } },
	  { { "abc", EINVAL }, { "\n", EINVAL }, { "scan", EINVAL },
	    { "[none]", EINVAL }, { "none none", EINVAL }, { "0", EINVAL } } },
	{ "advisor_max_cpu", { { "50", "50" }, { "101", "101" } },
	  { ULONG_BAD } },
	{ "advisor_min_pages_to_scan", { { "600", "600" } }, { ULONG_BAD } },
	{ "advisor_max_pages_to_scan", { { "20000", "20000" } }, { ULONG_BAD } },
	{ "advisor_target_scan_time", { { "100", "100" } },
	  { ULONG_BAD, { "0", EINVAL } } },
};

static const char *printable(const char *s)
{
	return !strcmp(s, "\n") ? "\\n" : s;
}

static void test_knob(const struct knob *kn)
{
	char before[64], now[64];
	long ret;

	CHECK(ksm_read_str(kn->name, before, sizeof(before)) == 0, "read %s",
	      kn->name);
	for (int i = 0; i < 12 && kn->bad[i].in; i++) {
		const struct bad *b = &kn->bad[i];

		ret = ksm_write_raw(kn->name, b->in, strlen(b->in));
		CHECK(ret == -b->err, "%s < \"%s\": %ld (%s), want -%s",
		      kn->name, printable(b->in), ret,
		      ret < 0 ? strerror(-ret) : "accepted", strerror(b->err));
		ksm_read_str(kn->name, now, sizeof(now));
		CHECK(!strcmp(now, before), "%s < \"%s\": now \"%s\", was \"%s\"",
		      kn->name, printable(b->in), now, before);
	}
	ret = ksm_write_raw(kn->name, "", 0);
	CHECK(ret == 0, "%s < \"\": %ld", kn->name, ret);
	ksm_read_str(kn->name, now, sizeof(now));
	CHECK(!strcmp(now, before), "%s < \"\": now \"%s\"", kn->name, now);

	for (int i = 0; i < 8 && kn->valid[i][0]; i++) {
		const char *in = kn->valid[i][0];

		ret = ksm_write_raw(kn->name, in, strlen(in));
		CHECK(ret == (long)strlen(in), "%s < \"%s\": %ld", kn->name,
		      printable(in), ret);
		ksm_read_str(kn->name, now, sizeof(now));
		CHECK(!strcmp(now, kn->valid[i][1]), "%s < \"%s\": reads \"%s\"",
		      kn->name, printable(in), now);
	}
	/* Put it back. */
	if (!strcmp(kn->name, "advisor_mode"))
		ksm_write_str(kn->name, strstr(before, "[none]") ? "none" :
			      "scan-time");
	else
		ksm_write_str(kn->name, before);
	ksm_read_str(kn->name, now, sizeof(now));
	CHECK(!strcmp(now, before), "%s restored: \"%s\", was \"%s\"",
	      kn->name, now, before);
	ktap_result(checks_passed(), "%s_rejects_bad_input", kn->name);
}

/*
 * With the scan-time advisor, pages_to_scan is the advisor's: a write is
 * EINVAL however good the number. Choosing an advisor resets pages_to_scan:
 * to advisor_min_pages_to_scan for scan-time, to 100 for none.
 */
static void test_advisor_owns_pages_to_scan(void)
{
	long min = ksm_read("advisor_min_pages_to_scan");
	long pages = ksm_read("pages_to_scan");

	CHECK(ksm_write_str("advisor_mode", "scan-time") == 0, "scan-time");
	CHECK(ksm_read("pages_to_scan") == min, "pages_to_scan %ld, want %ld",
	      ksm_read("pages_to_scan"), min);
	CHECK(ksm_write("pages_to_scan", 100) == -EINVAL, "write 100");
	CHECK(ksm_write_str("pages_to_scan", "abc") == -EINVAL, "write abc");
	CHECK(ksm_read("pages_to_scan") == min, "pages_to_scan %ld, want %ld",
	      ksm_read("pages_to_scan"), min);
	CHECK(ksm_write_str("advisor_mode", "none") == 0, "none");
	CHECK(ksm_read("pages_to_scan") == 100, "pages_to_scan %ld, want 100",
	      ksm_read("pages_to_scan"));
	CHECK(ksm_write("pages_to_scan", pages) == 0, "write %ld", pages);
	CHECK(ksm_read("pages_to_scan") == pages, "pages_to_scan %ld",
	      ksm_read("pages_to_scan"));
	ktap_result(checks_passed(), "pages_to_scan_locked_by_scan_time_advisor");
}

/*
 * merge_across_nodes and max_page_sharing can change only while no KSM
 * page exists: EBUSY otherwise, but rewriting the current value is fine.
 */
static void test_busy_while_shared(void)
{
	char *p = map_pages(2);

	fill_page(p, 0, 81);
	memcpy(p + page_size, p, page_size);
	CHECK(merge_pages(p, 2) == 0, "madvise");
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_counts(1, 1, 0, 0), "merged");
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(ksm_write("merge_across_nodes", 0) == -EBUSY,
	      "merge_across_nodes=0 while shared");
	CHECK(ksm_read("merge_across_nodes") == 1, "merge_across_nodes %ld",
	      ksm_read("merge_across_nodes"));
	CHECK(ksm_write("merge_across_nodes", 1) == 0, "same value");
	CHECK(ksm_write("max_page_sharing", 10) == -EBUSY,
	      "max_page_sharing=10 while shared");
	CHECK(ksm_read("max_page_sharing") == 256, "max_page_sharing %ld",
	      ksm_read("max_page_sharing"));
	CHECK(ksm_write("max_page_sharing", 256) == 0, "same value");
	CHECK(page_holds(p, 0, 81) && holds_pattern(p + page_size, 81, 0),
	      "content");
	CHECK(ksm_read("pages_shared") == 1, "still shared");

	/* Unmerged, both can change. */
	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(page_holds(p, 0, 81) && holds_pattern(p + page_size, 81, 0),
	      "content after run=2");
	CHECK(ksm_write("merge_across_nodes", 0) == 0 &&
	      ksm_read("merge_across_nodes") == 0, "merge_across_nodes=0");
	CHECK(ksm_write("merge_across_nodes", 1) == 0 &&
	      ksm_read("merge_across_nodes") == 1, "merge_across_nodes=1");
	CHECK(ksm_write("max_page_sharing", 10) == 0 &&
	      ksm_read("max_page_sharing") == 10, "max_page_sharing=10");
	CHECK(ksm_write("max_page_sharing", 256) == 0, "max_page_sharing=256");
	CHECK(ksm_pause() == 0, "run=0");
	munmap(p, 2 * page_size);
	ktap_result(checks_passed(), "busy_while_ksm_pages_exist");
}

/* Read-only files refuse to open for writing: EACCES, even for root. */
static void test_read_only(void)
{
	static const char *const ro[] = {
		"pages_scanned", "pages_shared", "pages_sharing",
		"pages_unshared", "pages_volatile", "pages_skipped",
		"ksm_zero_pages", "full_scans", "stable_node_chains",
		"stable_node_dups", "general_profit",
	};
	char before[64], now[64];
	long ret;

	for (size_t i = 0; i < ARRAY_SIZE(ro); i++) {
		CHECK(ksm_read_str(ro[i], before, sizeof(before)) == 0,
		      "read %s", ro[i]);
		ret = ksm_write_raw(ro[i], "0", 1);
		CHECK(ret == -EACCES, "%s < \"0\": %ld", ro[i], ret);
		ksm_read_str(ro[i], now, sizeof(now));
		CHECK(!strcmp(now, before), "%s: now \"%s\", was \"%s\"", ro[i],
		      now, before);
	}
	ktap_result(checks_passed(), "read_only_files_reject_writes");
}

int main(void)
{
	const int n = ARRAY_SIZE(knobs);

	ksm_save_settings();
	ktap_plan(n + 3);
	/* Nothing scans, so nothing the advisor could change under us. */
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_pause() == 0, "run=0");
	if (!checks_passed())
		ktap_diag("no KSM to reset");
	for (int i = 0; i < n; i++)
		test_knob(&knobs[i]);
	/* advisor_mode's round trip reset pages_to_scan to 100. */
	ksm_reset();
	ksm_pause();
	test_advisor_owns_pages_to_scan();
	test_busy_while_shared();
	test_read_only();
	return ktap_finish();
}
