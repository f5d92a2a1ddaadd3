// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_fidelity.c - the finer points of mainline 6.12's behaviour that a
 * tool or an administrator reads, pinned down exactly in step mode (one
 * full scan, or one batch, per kick):
 *   smart scan: a unique page is read at visits 1-4, 6, 9, 14, 23; the
 *	other visits are skips, counted in pages_skipped and neither in
 *	pages_scanned nor against pages_to_scan;
 *   tracepoints: ksm_start_scan and ksm_stop_scan carry the number of the
 *	pass (full_scans before it ends); ksm_merge_with_ksm_page carries
 *	the KSM page's pfn, first with no KSM page for the page that becomes
 *	one; ksm_merge_one_page carries the zero page's pfn; tearing down a
 *	stale KSM page emits ksm_remove_rmap_item for all its mappings but
 *	one, then ksm_remove_ksm_page;
 *   registration: an mm that registers in the middle of a pass is first
 *	scanned in the next one;
 *   advisor: advisor_max_cpu keeps the low 32 bits of what is written;
 *	ksm_advisor reports a scan time of at least a second, and after a
 *	short, cheap pass multiplies pages_to_scan by ten (its 10% CPU
 *	floor), up to advisor_max_pages_to_scan, not held at
 *	advisor_min_pages_to_scan;
 *   profit: the metadata general_profit subtracts is what the kernel's
 *	slab really grew by, within a factor of two.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <unistd.h>

#include "ksmtest.h"

#define TRACEFS "/sys/kernel/tracing"

/* tracefs: the records of the events switched on, read after each step. */
static bool trace_ok;

static int trace_write(const char *file, const char *val)
{
	char path[256];

	snprintf(path, sizeof(path), TRACEFS "/%s", file);
	return write_file_trunc(path, val);
}

static bool trace_setup(void)
{
	if (access(TRACEFS "/trace", F_OK))
		mount("nodev", TRACEFS, "tracefs", 0, NULL);
	trace_ok = !access(TRACEFS "/events/ksm", F_OK) &&
		   !trace_write("events/ksm/enable", "1") &&
		   !trace_write("tracing_on", "1");
	return trace_ok;
}

static void trace_clear(void)
{
	trace_write("trace", "");
}

static void trace_teardown(void)
{
	if (!trace_ok)
		return;
	trace_write("events/ksm/enable", "0");
	trace_clear();
}

/*
 * Count the records of @event whose text after "event: " starts with
 * @prefix ("" for all); the first one's text goes into @first.
 */
static int trace_count(const char *event, const char *prefix, char *first,
		       size_t size)
{
	char line[512], tag[64];
	int n = 0;
	FILE *f = fopen(TRACEFS "/trace", "r");

	if (!f)
		return -1;
	snprintf(tag, sizeof(tag), " %s: ", event);
	while (fgets(line, sizeof(line), f)) {
		char *s = strstr(line, tag);

		if (line[0] == '#' || !s)
			continue;
		s += strlen(tag);
		if (strncmp(s, prefix, strlen(prefix)))
			continue;
		if (!n++ && first)
			snprintf(first, size, "%s", s);
	}
	fclose(f);
	return n;
}

/* Step mode with every mergeable page scanned in one batch. */
static void step_setup(void)
{
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("pages_to_scan", 100000) == 0, "pages_to_scan");
	CHECK(ksm_step_mode() == 0, "step mode");
}

/* Is visit @v (from 1) of an unchanged unique page a read? */
static bool smart_reads(int v)
{
	static const int reads[] = { 1, 2, 3, 4, 6, 9, 14, 23, 32 };

	for (size_t i = 0; i < ARRAY_SIZE(reads); i++)
		if (reads[i] == v)
			return true;
	return false;
}

static void test_smart_scan(void)
{
	const int pages = 32, visits = 24;
	char *p = map_pages(pages);
	long scanned, skipped, want_scanned = 0, want_skipped = 0;

	step_setup();
	CHECK(ksm_write("smart_scan", 1) == 0, "smart_scan=1");
	for (int i = 0; i < pages; i++)
		fill_page(p, i, 0xf1d0);
	CHECK(merge_pages(p, pages) == 0, "madvise");
	scanned = ksm_read("pages_scanned");
	skipped = ksm_read("pages_skipped");
	for (int v = 1; v <= visits && checks_passed_so_far(); v++) {
		bool read = smart_reads(v);

		CHECK(ksm_step(), "step %d", v);
		want_scanned += read ? pages : 0;
		want_skipped += read ? 0 : pages;
		CHECK(ksm_read("pages_scanned") - scanned == want_scanned,
		      "visit %d: pages_scanned +%ld, want +%ld", v,
		      ksm_read("pages_scanned") - scanned, want_scanned);
		CHECK(ksm_read("pages_skipped") - skipped == want_skipped,
		      "visit %d: pages_skipped +%ld, want +%ld", v,
		      ksm_read("pages_skipped") - skipped, want_skipped);
		/* Read unchanged, a page is unshared; skipped, it is not. */
		CHECK(ksm_read("pages_unshared") == (read && v > 1 ? pages : 0),
		      "visit %d: pages_unshared %ld", v,
		      ksm_read("pages_unshared"));
	}
	CHECK(pages_wrong(p, pages, 0xf1d0) == 0, "content");
	munmap(p, pages * page_size);
	ktap_result(checks_passed(), "smart_scan_schedule_and_counts");
}

/* ksm_start_scan and ksm_stop_scan: "seq N" with N = full_scans before. */
static void check_scan_seq(long before)
{
	char rec[256], want[64];

	snprintf(want, sizeof(want), "seq %ld ", before);
	CHECK(trace_count("ksm_start_scan", "", rec, sizeof(rec)) == 1 &&
	      !strncmp(rec, want, strlen(want)), "ksm_start_scan: %s, want %s",
	      rec, want);
	CHECK(trace_count("ksm_stop_scan", "", rec, sizeof(rec)) == 1 &&
	      !strncmp(rec, want, strlen(want)), "ksm_stop_scan: %s, want %s",
	      rec, want);
}

/* One traced step; returns full_scans before it. */
static long traced_step(void)
{
	long before = ksm_read("full_scans");

	trace_clear();
	CHECK(ksm_step(), "step");
	check_scan_seq(before);
	return before;
}

static void test_trace_merge(void)
{
	const int copies = 3;
	char *p = map_pages(copies + 2), *z = p + copies * page_size;
	char rec[256], want[64];
	unsigned long kpfn, zpfn;

	step_setup();
	CHECK(ksm_write("use_zero_pages", 1) == 0, "use_zero_pages=1");
	for (int i = 0; i < copies; i++)
		fill_pattern(p + i * page_size, 0xf1d1, 0);
	memset(z, 0, 2 * page_size);
	CHECK(merge_pages(p, copies + 2) == 0, "madvise");
	traced_step();
	traced_step();
	kpfn = page_pfn(p);
	zpfn = page_pfn(z);
	for (int i = 1; i < copies; i++)
		CHECK(page_pfn(p + i * page_size) == kpfn, "copy %d not merged",
		      i);
	CHECK(page_pfn(z + page_size) == zpfn, "zero pages not merged");
	/* A pair: the page that becomes KSM, then its twin; then a joiner. */
	snprintf(want, sizeof(want), "pfn %lu ", kpfn);
	CHECK(trace_count("ksm_merge_with_ksm_page", want, rec,
			  sizeof(rec)) == 1, "no record \"%s\": %s", want, rec);
	snprintf(want, sizeof(want), "ksm pfn %lu ", kpfn);
	CHECK(trace_count("ksm_merge_with_ksm_page", want, NULL, 0) ==
	      copies - 1, "not %d records \"%s\"", copies - 1, want);
	CHECK(trace_count("ksm_merge_with_ksm_page", "", rec, sizeof(rec)) ==
	      copies, "%d merge records, want %d; first: %s",
	      trace_count("ksm_merge_with_ksm_page", "", NULL, 0), copies, rec);
	snprintf(want, sizeof(want), "ksm pfn %lu ", zpfn);
	CHECK(trace_count("ksm_merge_one_page", want, rec, sizeof(rec)) == 2,
	      "zero page records \"%s\": first %s", want, rec);

	/* Every copy written: the KSM page is gone before ksmd sees it. */
	for (int i = 0; i < copies; i++)
		fill_pattern(p + i * page_size, 0xf1d2, i);
	traced_step();
	snprintf(want, sizeof(want), "pfn %lu ", kpfn);
	CHECK(trace_count("ksm_remove_rmap_item", want, rec, sizeof(rec)) ==
	      copies - 1, "%d ksm_remove_rmap_item \"%s\", want %d; first %s",
	      trace_count("ksm_remove_rmap_item", "", NULL, 0), want,
	      copies - 1, rec);
	snprintf(want, sizeof(want), "pfn %lu\n", kpfn);
	CHECK(trace_count("ksm_remove_ksm_page", want, NULL, 0) == 1,
	      "%d ksm_remove_ksm_page \"%s\"",
	      trace_count("ksm_remove_ksm_page", "", NULL, 0), want);
	for (int i = 0; i < copies; i++)
		CHECK(holds_pattern(p + i * page_size, 0xf1d2, i), "copy %d", i);
	munmap(p, (copies + 2) * page_size);
	ktap_result(checks_passed(), "tracepoints_carry_mainline_values");
}

static int kid_idle(void *arg, int i, int cmd_fd, int reply_fd)
{
	kid_reply(reply_fd, 'r');
	kid_wait_cmd(cmd_fd);
	return 0;
}

/* A fork in the middle of a pass: the child waits for the next pass. */
static void test_registration_order(void)
{
	const int pages = 64;
	char *p = map_pages(pages);
	struct kids k;
	char r[1];

	step_setup();
	for (int i = 0; i < pages; i++)
		fill_page(p, i, 0xf1d3);
	CHECK(merge_pages(p, pages) == 0, "madvise");
	CHECK(ksm_step(), "first pass");
	CHECK(ksm_write("pages_to_scan", pages / 4) == 0, "pages_to_scan");
	CHECK(ksm_step_batch() && ksm_step_batch(), "half a pass");
	CHECK(kids_start(&k, 1, kid_idle, NULL) == 0 && kids_collect(&k, r),
	      "fork");
	CHECK(ksm_write("pages_to_scan", 100000) == 0, "pages_to_scan");
	CHECK(ksm_step(), "rest of the pass");
	CHECK(ksm_stat(k.pid[0], "ksm_rmap_items") == 0,
	      "child scanned in the pass it registered in: %ld pages",
	      ksm_stat(k.pid[0], "ksm_rmap_items"));
	CHECK(ksm_step(), "next pass");
	CHECK(ksm_stat(k.pid[0], "ksm_rmap_items") == pages,
	      "child's ksm_rmap_items %ld in the next pass, want %d",
	      ksm_stat(k.pid[0], "ksm_rmap_items"), pages);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "child");
	CHECK(pages_wrong(p, pages, 0xf1d3) == 0, "content");
	munmap(p, pages * page_size);
	ktap_result(checks_passed(), "new_mm_waits_for_the_next_pass");
}

/* The fields of one ksm_advisor record. */
struct adv_rec {
	long long secs;
	unsigned long pages;
	unsigned int cpu;
};

static bool advisor_record(struct adv_rec *a)
{
	char rec[256];

	return trace_count("ksm_advisor", "", rec, sizeof(rec)) == 1 &&
	       sscanf(rec, "ksm scan time %lld pages_to_scan %lu cpu percent %u",
		      &a->secs, &a->pages, &a->cpu) == 3;
}

static void test_advisor(void)
{
	const long min = 64, max = 20000;
	const int pages = 8;
	char *p = map_pages(pages);
	long before = 0;
	struct adv_rec a;

	CHECK(ksm_reset() == 0, "reset");
	/*
	 * Stock parses an unsigned long and keeps its low 32 bits: 2^32 + 55
	 * is 55 with a 64-bit long, out of range (-EINVAL) with a 32-bit one.
	 */
	if (sizeof(long) == 8) {
		CHECK(ksm_write_str("advisor_max_cpu", "4294967351") == 0, "2^32+55");
		CHECK(ksm_read("advisor_max_cpu") == 55, "advisor_max_cpu %ld",
		      ksm_read("advisor_max_cpu"));
	} else {
		CHECK(ksm_write_str("advisor_max_cpu", "4294967351") == -EINVAL,
		      "2^32+55");
	}
	CHECK(ksm_write("advisor_max_cpu", 70) == 0, "advisor_max_cpu=70");
	CHECK(ksm_write("advisor_min_pages_to_scan", min) == 0, "min");
	CHECK(ksm_write("advisor_max_pages_to_scan", max) == 0, "max");
	CHECK(ksm_write("advisor_target_scan_time", 200) == 0, "target");
	for (int i = 0; i < pages; i++)
		fill_page(p, i, 0xf1d4);
	CHECK(merge_pages(p, pages) == 0, "madvise");
	CHECK(ksm_step_mode() == 0, "step mode");
	CHECK(ksm_write_str("advisor_mode", "scan-time") == 0, "scan-time");
	CHECK(ksm_read("pages_to_scan") == min, "pages_to_scan %ld",
	      ksm_read("pages_to_scan"));
	/*
	 * Passes of 8 pages: well under the 200 s target, so the rate the
	 * target asks for is tiny and the CPU floor decides: ten percent of
	 * a CPU at the cost per page just seen. The first pass after the
	 * advisor starts is left out: mainline measures its CPU from ksmd's
	 * start.
	 */
	for (int pass = 0; pass < 4 && checks_passed_so_far(); pass++) {
		before = ksm_read("pages_to_scan");
		trace_clear();
		CHECK(ksm_step(), "pass %d", pass);
		CHECK(advisor_record(&a), "pass %d: no ksm_advisor record", pass);
		CHECK(a.secs >= 1, "pass %d: scan time %lld", pass, a.secs);
		CHECK(a.pages == (unsigned long)ksm_read("pages_to_scan"),
		      "pass %d: traced %lu, pages_to_scan %ld", pass, a.pages,
		      ksm_read("pages_to_scan"));
		if (!pass || !a.cpu)
			continue;
		{
			long floor = before / a.cpu * 10;

			CHECK(ksm_read("pages_to_scan") ==
			      (floor < max ? floor : max),
			      "pass %d: pages_to_scan %ld after %ld at %u%% CPU",
			      pass, ksm_read("pages_to_scan"), before, a.cpu);
		}
	}
	ktap_diag("pages_to_scan %ld after 4 passes", ksm_read("pages_to_scan"));
	CHECK(ksm_write_str("advisor_mode", "none") == 0, "none");
	ksm_write("advisor_min_pages_to_scan", 500);
	ksm_write("advisor_max_pages_to_scan", 30000);
	CHECK(pages_wrong(p, pages, 0xf1d4) == 0, "content");
	munmap(p, pages * page_size);
	ktap_result(checks_passed(), "advisor_follows_mainline");
}

/* Bytes of metadata general_profit subtracts. */
static long profit_cost(void)
{
	return (ksm_read("pages_sharing") + ksm_read("ksm_zero_pages")) *
	       (long)page_size - ksm_read("general_profit");
}

static long slab_bytes(void)
{
	return meminfo_kb("Slab") * 1024;
}

/*
 * Slab grows by less than what is allocated when objects go into slabs
 * that earlier tests left partly free, so a small growth bounds the cost
 * from below only (@upper false); a large one bounds it on both sides.
 * Under slab debugging (slab_padding()) nothing is compared.
 */
static void check_cost(const char *what, long cost, long grew, bool upper)
{
	double pad = slab_padding();

	ktap_diag("%s: profit's metadata %ld bytes, slab grew %ld, padding %.2f",
		  what, cost, grew, pad);
	/*
	 * Under slab debugging (make test DEBUG=kasan) Slab: moves with
	 * KASAN's quarantine and the debug records as much as with these
	 * objects (seen: -620 KB and +4 MB for 160 KB of metadata): it
	 * measures nothing there, and the normal kernel's run checks this.
	 */
	if (pad > 1.5) {
		ktap_diag("%s: slab debugging, not compared", what);
		return;
	}
	/*
	 * A lower bound only, and no growth at all: every object went into
	 * slabs earlier tests had left partly free (seen once in a whole
	 * run: 176 KB of metadata, Slab: unmoved), which bounds nothing.
	 */
	if (!upper && !grew) {
		ktap_diag("%s: slab did not grow, not compared", what);
		return;
	}
	CHECK(grew > 0 && cost * 2 >= grew &&
	      (!upper || cost <= grew * 2),
	      "%s: metadata %ld bytes, slab grew %ld", what, cost, grew);
}

static void test_profit(void)
{
	const int pages = 16384;
	char *p = map_pages(pages), *one = map_pages(1);
	long slab0, process;

	step_setup();
	for (int i = 0; i < pages; i++)
		fill_page(p, i, 0xf1d5);
	/*
	 * One pass over a single page first: whatever earlier tests left
	 * for ksmd to forget or shrink is freed in it, not in the pass
	 * measured (ksmd runs only while some memory is mergeable).
	 */
	fill_page(one, 0, 0xf1d7);
	CHECK(merge_pages(one, 1) == 0 && ksm_step(), "settle");
	CHECK(merge_pages(p, pages) == 0, "madvise");
	slab0 = slab_bytes();
	CHECK(ksm_step(), "tracked");
	check_cost("tracked pages", profit_cost(), slab_bytes() - slab0, false);
	/* Pairs: every page merged, half of them saved. */
	for (int i = 0; i < pages; i++)
		fill_pattern(p + i * page_size, 0xf1d6, i / 2);
	CHECK(ksm_step() && ksm_step(), "merge");
	CHECK(ksm_read("pages_shared") == pages / 2 &&
	      ksm_read("pages_sharing") == pages / 2, "shared %ld sharing %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
	check_cost("merged pairs", profit_cost(), slab_bytes() - slab0, true);
	/*
	 * This process's share: the records of its pages and mappings, at
	 * least a word for each page it has tracked; not the KSM pages' own
	 * records nor the tables, which all processes share.
	 */
	process = (ksm_stat(0, "ksm_merging_pages") +
		   ksm_stat(0, "ksm_zero_pages")) * (long)page_size -
		  ksm_stat(0, "ksm_process_profit");
	ktap_diag("ksm_process_profit's metadata %ld bytes", process);
	CHECK(process >= pages * 8L && process <= profit_cost(),
	      "process metadata %ld, all %ld", process, profit_cost());
	for (int i = 0; i < pages; i++)
		CHECK(holds_pattern(p + i * page_size, 0xf1d6, i / 2),
		      "page %d", i);
	munmap(p, (size_t)pages * page_size);
	munmap(one, page_size);
	ktap_result(checks_passed(), "profit_subtracts_real_metadata");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(5);
	test_smart_scan();
	if (trace_setup()) {
		test_trace_merge();
		test_registration_order();
		test_advisor();
	} else {
		ktap_skip_named("tracepoints_carry_mainline_values", "no tracefs");
		test_registration_order();
		ktap_skip_named("advisor_follows_mainline", "no tracefs");
	}
	test_profit();
	trace_teardown();
	ksm_reset();
	return ktap_finish();
}
