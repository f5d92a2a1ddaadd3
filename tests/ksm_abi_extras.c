// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_abi_extras.c - the vmstat counters of KSM (mainline 6.12: cow_ksm
 * counts write faults that copy a KSM page, ksm_swpin_copy the KSM pages
 * copied at swap-in), and samepage's own max_kernel_pages (a cap on the
 * number of KSM pages, 0 for none) with kernel_pages_allocated (how many
 * there are). Mainline has neither file: that test is skipped there.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define PAGES 32
#define SETS 6

/* Writing each of @PAGES merged copies copies the KSM page: cow_ksm counts it. */
static void test_cow_ksm(void)
{
	char *p = map_pages(PAGES);
	long before, after;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(vmstat("ksm_swpin_copy") >= 0, "no ksm_swpin_copy in /proc/vmstat");
	CHECK(vmstat("cow_ksm") >= 0, "no cow_ksm in /proc/vmstat");
	for (int i = 0; i < PAGES; i++)
		fill_pattern(p + i * page_size, 0xc0, 0);
	CHECK(merge_pages(p, PAGES) == 0, "madvise");
	CHECK(ksm_wait_counts(1, PAGES - 1, 0, 0), "merged");
	CHECK(ksm_pause() == 0, "run=0");
	before = vmstat("cow_ksm");
	for (int i = 0; i < PAGES; i++)
		fill_page(p, i, 0xc1);
	after = vmstat("cow_ksm");
	CHECK(after - before >= PAGES, "cow_ksm grew by %ld, want %d",
	      after - before, PAGES);
	CHECK(pages_wrong(p, PAGES, 0xc1) == 0, "written content");
	CHECK(smaps_kb(0, p, "KSM") == 0, "KSM %ld kB after the writes",
	      smaps_kb(0, p, "KSM"));
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_counts(0, 0, PAGES, 0), "written pages unshared");
	/* Writing a private page is no KSM copy. */
	before = vmstat("cow_ksm");
	for (int i = 0; i < PAGES; i++)
		fill_page(p, i, 0xc2);
	CHECK(vmstat("cow_ksm") == before, "cow_ksm grew by %ld on private pages",
	      vmstat("cow_ksm") - before);
	munmap(p, PAGES * page_size);
	ktap_result(checks_passed(), "vmstat_cow_ksm");
}

static char saved_cap[32];

static void restore_cap(void)
{
	if (saved_cap[0])
		ksm_write_str("max_kernel_pages", saved_cap);
}

struct kpages_want {
	long shared, sharing;
};

/* With ksmd paused: pages_shared and pages_sharing, and as many kernel pages. */
static bool kpages_are(void *arg)
{
	struct kpages_want *w = arg;
	long shared, sharing, kpages;

	if (ksm_pause())
		return false;
	shared = ksm_read("pages_shared");
	sharing = ksm_read("pages_sharing");
	kpages = ksm_read("kernel_pages_allocated");
	ksm_resume();
	return shared == w->shared && sharing == w->sharing && kpages == shared;
}

/* SETS pairs of twins under max_kernel_pages=3: three KSM pages, no more. */
static void test_max_kernel_pages(void)
{
	struct kpages_want want = { 3, 3 };
	char *p = map_pages(2 * SETS), *q, *keep;
	int set;
	long shared;

	CHECK(ksm_reset() == 0, "reset");
	/* A unique page keeps ksmd scanning when the others are gone. */
	keep = map_pages(1);
	fill_page(keep, 0, 0xc4);
	CHECK(merge_pages(keep, 1) == 0, "madvise");
	CHECK(ksm_write("max_kernel_pages", 3) == 0, "max_kernel_pages=3");
	CHECK(ksm_read("max_kernel_pages") == 3, "max_kernel_pages %ld",
	      ksm_read("max_kernel_pages"));
	for (int i = 0; i < 2 * SETS; i++)
		fill_pattern(p + i * page_size, 0xc3, i / 2);
	CHECK(merge_pages(p, 2 * SETS) == 0, "madvise");
	CHECK(ksm_wait_until(kpages_are, &want, 20),
	      "pages_shared %ld pages_sharing %ld kernel_pages_allocated %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"),
	      ksm_read("kernel_pages_allocated"));
	CHECK(ksm_wait_scans(3), "scans");
	CHECK(kpages_are(&want), "after 3 more scans: pages_shared %ld",
	      ksm_read("pages_shared"));
	CHECK(self_merging_pages() == 6, "ksm_merging_pages %ld",
	      self_merging_pages());
	for (int i = 0; i < 2 * SETS; i++)
		CHECK(holds_pattern(p + i * page_size, 0xc3, i / 2), "page %d", i);
	ktap_result(checks_passed(), "max_kernel_pages_caps_ksm_pages");

	/* At the cap, a third copy of a merged pair still joins its KSM page. */
	for (set = 0; set < SETS; set++)
		if (page_pfn(p + 2 * set * page_size) ==
		    page_pfn(p + (2 * set + 1) * page_size))
			break;
	CHECK(set < SETS, "no merged pair");
	q = map_pages(1);
	fill_pattern(q, 0xc3, set);
	CHECK(merge_pages(q, 1) == 0, "madvise");
	want.sharing = 4;
	CHECK(ksm_wait_until(kpages_are, &want, 20),
	      "pages_shared %ld pages_sharing %ld kernel_pages_allocated %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"),
	      ksm_read("kernel_pages_allocated"));
	CHECK(page_pfn(q) == page_pfn(p + 2 * set * page_size),
	      "third copy on its own frame");
	CHECK(holds_pattern(q, 0xc3, set), "third copy");
	munmap(q, page_size);
	ktap_result(checks_passed(), "max_kernel_pages_lets_pages_join");

	/* 0: no cap, every pair merges. */
	CHECK(ksm_write("max_kernel_pages", 0) == 0, "max_kernel_pages=0");
	want.shared = want.sharing = SETS;
	CHECK(ksm_wait_until(kpages_are, &want, 20),
	      "pages_shared %ld pages_sharing %ld kernel_pages_allocated %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"),
	      ksm_read("kernel_pages_allocated"));
	CHECK(self_merging_pages() == 2 * SETS, "ksm_merging_pages %ld",
	      self_merging_pages());
	for (int i = 0; i < 2 * SETS; i++)
		CHECK(holds_pattern(p + i * page_size, 0xc3, i / 2), "page %d", i);

	/* Lowered below what exists: no new KSM page, the old ones stay. */
	CHECK(ksm_write("max_kernel_pages", 2) == 0, "max_kernel_pages=2");
	shared = ksm_read("pages_shared");
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_read("pages_shared") == shared, "pages_shared %ld, was %ld",
	      ksm_read("pages_shared"), shared);
	CHECK(ksm_write("max_kernel_pages", 0) == 0, "max_kernel_pages=0");
	munmap(p, 2 * SETS * page_size);
	CHECK(ksm_wait_counts(0, 0, 1, 0), "unmapped");
	CHECK(ksm_read("kernel_pages_allocated") == 0,
	      "kernel_pages_allocated %ld", ksm_read("kernel_pages_allocated"));
	munmap(keep, page_size);
	ktap_result(checks_passed(), "max_kernel_pages_zero_is_no_cap");
}

static void test_max_kernel_pages_input(void)
{
	static const char *const bad[] = {
		"abc", "-1", "1x", " 3", "0x10", "\n", "99999999999999999999",
	};
	char now[32];
	long ret;

	CHECK(ksm_write("max_kernel_pages", 7) == 0, "max_kernel_pages=7");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = ksm_write_raw("max_kernel_pages", bad[i], strlen(bad[i]));
		CHECK(ret == -EINVAL, "\"%s\": %ld", bad[i], ret);
		ksm_read_str("max_kernel_pages", now, sizeof(now));
		CHECK(!strcmp(now, "7"), "\"%s\" left \"%s\"", bad[i], now);
	}
	CHECK(ksm_write_raw("kernel_pages_allocated", "0", 1) == -EACCES,
	      "kernel_pages_allocated writable");
	CHECK(ksm_write_str("max_kernel_pages", "5\n") == 0, "\"5\\n\"");
	CHECK(ksm_read("max_kernel_pages") == 5, "max_kernel_pages %ld",
	      ksm_read("max_kernel_pages"));
	CHECK(ksm_write("max_kernel_pages", 0) == 0, "max_kernel_pages=0");
	ktap_result(checks_passed(), "max_kernel_pages_rejects_bad_input");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(5);
	test_cow_ksm();
	if (ksm_read_str("max_kernel_pages", saved_cap, sizeof(saved_cap))) {
		static const char *const names[] = {
			"max_kernel_pages_caps_ksm_pages",
			"max_kernel_pages_lets_pages_join",
			"max_kernel_pages_zero_is_no_cap",
			"max_kernel_pages_rejects_bad_input",
		};

		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no max_kernel_pages (not samepage)");
	}
	atexit(restore_cap);
	test_max_kernel_pages();
	test_max_kernel_pages_input();
	restore_cap();
	return ktap_finish();
}
