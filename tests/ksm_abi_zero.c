// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_abi_zero.c - use_zero_pages, as mm/ksm.c of mainline 6.12 has it:
 * with use_zero_pages=1, mergeable pages filled with zeroes are replaced by
 * the zero page, not merged into a KSM page. ksm_zero_pages, global and in
 * /proc/self/ksm_stat, counts them; a write gives the page back as a private
 * one; MADV_UNMERGEABLE gives every one back. With use_zero_pages=0 such
 * pages merge into one KSM page like any other content.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define PAGES 32

static unsigned long zero_pfn;

static bool is_zero(const char *page)
{
	for (size_t i = 0; i < page_size; i++)
		if (page[i])
			return false;
	return true;
}

static int zero_pages_wrong(const char *p, int from, int to)
{
	int bad = 0;

	for (int i = from; i < to; i++)
		bad += !is_zero(p + i * page_size);
	return bad;
}

static int zero_pfn_pages(const char *p, int pages)
{
	int n = 0;

	for (int i = 0; i < pages; i++)
		n += page_pfn(p + i * page_size) == zero_pfn;
	return n;
}

struct want_zero {
	long global, self;
};

static bool zero_counts_are(void *arg)
{
	struct want_zero *w = arg;

	return ksm_read("ksm_zero_pages") == w->global &&
	       ksm_stat(0, "ksm_zero_pages") == w->self;
}

static bool wait_zero_counts(long global, long self)
{
	struct want_zero w = { global, self };

	if (ksm_wait_until(zero_counts_are, &w, 20))
		return true;
	ktap_diag("ksm_zero_pages %ld, ksm_stat %ld; want %ld, %ld",
		  ksm_read("ksm_zero_pages"), ksm_stat(0, "ksm_zero_pages"),
		  global, self);
	return false;
}

static char *area;
static long base;

static void test_merge_to_zero_page(void)
{
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("use_zero_pages", 1) == 0, "use_zero_pages=1");
	base = ksm_read("ksm_zero_pages");
	CHECK(ksm_stat(0, "ksm_zero_pages") == 0, "ksm_stat ksm_zero_pages %ld",
	      ksm_stat(0, "ksm_zero_pages"));
	area = map_pages(PAGES);	/* written with zeroes: real pages */
	CHECK(zero_pfn_pages(area, PAGES) == 0, "%d pages on the zero page",
	      zero_pfn_pages(area, PAGES));
	CHECK(merge_pages(area, PAGES) == 0, "madvise");
	CHECK(wait_zero_counts(base + PAGES, PAGES), "zero pages counted");
	CHECK(zero_pfn_pages(area, PAGES) == PAGES, "%d of %d on the zero page",
	      zero_pfn_pages(area, PAGES), PAGES);
	CHECK(zero_pages_wrong(area, 0, PAGES) == 0, "content");
	/* No KSM page is made for them. */
	CHECK(ksm_wait_counts(0, 0, KSM_ANY, KSM_ANY), "no KSM page");
	CHECK(self_merging_pages() == 0, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(ksm_stat(0, "ksm_process_profit") > 0, "ksm_process_profit %ld",
	      ksm_stat(0, "ksm_process_profit"));
	ktap_result(checks_passed(), "zero_filled_pages_become_zero_page");
}

static void test_write_zero_page(void)
{
	fill_page(area, 0, 0x7e01);
	CHECK(page_holds(area, 0, 0x7e01), "written page");
	CHECK(page_pfn(area) != zero_pfn && page_pfn(area) != 0,
	      "written page still on the zero page");
	CHECK(zero_pages_wrong(area, 1, PAGES) == 0, "other pages");
	CHECK(zero_pfn_pages(area, PAGES) == PAGES - 1, "%d on the zero page",
	      zero_pfn_pages(area, PAGES));
	CHECK(ksm_read("ksm_zero_pages") == base + PAGES - 1,
	      "ksm_zero_pages %ld, want %ld", ksm_read("ksm_zero_pages"),
	      base + PAGES - 1);
	CHECK(ksm_stat(0, "ksm_zero_pages") == PAGES - 1,
	      "ksm_stat ksm_zero_pages %ld", ksm_stat(0, "ksm_zero_pages"));
	ktap_result(checks_passed(), "write_gives_private_page");
}

static void test_unmerge_zero_pages(void)
{
	CHECK(madvise(area, PAGES * page_size, MADV_UNMERGEABLE) == 0,
	      "MADV_UNMERGEABLE");
	CHECK(ksm_read("ksm_zero_pages") == base, "ksm_zero_pages %ld, want %ld",
	      ksm_read("ksm_zero_pages"), base);
	CHECK(ksm_stat(0, "ksm_zero_pages") == 0, "ksm_stat ksm_zero_pages %ld",
	      ksm_stat(0, "ksm_zero_pages"));
	CHECK(zero_pfn_pages(area, PAGES) == 0, "%d still on the zero page",
	      zero_pfn_pages(area, PAGES));
	CHECK(page_holds(area, 0, 0x7e01), "written page");
	CHECK(zero_pages_wrong(area, 1, PAGES) == 0, "content");
	munmap(area, PAGES * page_size);
	CHECK(ksm_read("ksm_zero_pages") == base, "after munmap: %ld",
	      ksm_read("ksm_zero_pages"));
	ktap_result(checks_passed(), "unmerge_restores_ksm_zero_pages");
}

/* Zeroes unmapped by munmap (not unmerged) leave the count too. */
static void test_munmap_zero_pages(void)
{
	area = map_pages(PAGES);
	CHECK(merge_pages(area, PAGES) == 0, "madvise");
	CHECK(wait_zero_counts(base + PAGES, PAGES), "zero pages counted");
	munmap(area, PAGES * page_size);
	CHECK(ksm_read("ksm_zero_pages") == base, "ksm_zero_pages %ld, want %ld",
	      ksm_read("ksm_zero_pages"), base);
	CHECK(ksm_stat(0, "ksm_zero_pages") == 0, "ksm_stat ksm_zero_pages %ld",
	      ksm_stat(0, "ksm_zero_pages"));
	ktap_result(checks_passed(), "munmap_drops_ksm_zero_pages");
}

/* Without use_zero_pages, zeroes are content like any other. */
static void test_zero_pages_off(void)
{
	CHECK(ksm_reset() == 0, "reset (use_zero_pages=0)");
	CHECK(ksm_read("use_zero_pages") == 0, "use_zero_pages %ld",
	      ksm_read("use_zero_pages"));
	base = ksm_read("ksm_zero_pages");
	area = map_pages(PAGES);
	CHECK(merge_pages(area, PAGES) == 0, "madvise");
	CHECK(ksm_wait_counts(1, PAGES - 1, 0, 0), "one KSM page of zeroes");
	CHECK(self_merging_pages() == PAGES, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(ksm_read("ksm_zero_pages") == base, "ksm_zero_pages %ld, want %ld",
	      ksm_read("ksm_zero_pages"), base);
	CHECK(ksm_stat(0, "ksm_zero_pages") == 0, "ksm_stat ksm_zero_pages %ld",
	      ksm_stat(0, "ksm_zero_pages"));
	CHECK(zero_pfn_pages(area, PAGES) == 0, "%d on the zero page",
	      zero_pfn_pages(area, PAGES));
	CHECK(smaps_kb(0, area, "KSM") == (long)(PAGES * page_size / 1024),
	      "smaps KSM %ld kB", smaps_kb(0, area, "KSM"));
	CHECK(zero_pages_wrong(area, 0, PAGES) == 0, "content");
	munmap(area, PAGES * page_size);
	ktap_result(checks_passed(), "zero_pages_off_merges_into_ksm_page");
}

int main(void)
{
	char *probe;

	ksm_save_settings();
	ktap_plan(5);
	/* An untouched page read once maps the zero page: learn its PFN. */
	probe = mmap(NULL, page_size, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	if (probe != MAP_FAILED && !*(volatile char *)probe)
		zero_pfn = page_pfn(probe);
	if (!zero_pfn)
		ktap_diag("no PFN for the zero page");
	test_merge_to_zero_page();
	test_write_zero_page();
	test_unmerge_zero_pages();
	test_munmap_zero_pages();
	test_zero_pages_off();
	return ktap_finish();
}
