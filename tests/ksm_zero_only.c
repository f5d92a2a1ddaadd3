// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_zero_only.c - zero_pages_only (samepage's): ksmd merges only
 * all-zero pages, into the zero page, and keeps nothing of the others.
 *
 * A process holds NZERO pages written full of zeroes and NPAIRS pairs of
 * equal pages that are not zero, all mergeable:
 *
 *   zero_only_merges_zeroes: with zero_pages_only=1 (use_zero_pages left
 *     at 0) the zero pages come to map the zero page (ksm_zero_pages, and
 *     the zero page's frame in pagemap), the pairs stay apart (no KSM
 *     page, distinct frames), and nothing is tracked (ksm_rmap_items 0,
 *     pages_unshared 0); every page holds its content, and a write to a
 *     page that maps the zero page reads back.
 *   zero_only_switch: pairs merged in the full mode stay merged, content
 *     intact, once zero_pages_only is set, and what was tracked of the
 *     other pages is forgotten; with it 0 again, new pairs merge.
 *   zero_only_bad_input: 2, -1 and "x" are EINVAL, the value unchanged.
 *
 * zero_pages_only is samepage's: every test skips on stock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define NZERO		64
#define NPAIRS		32
#define SEED		0x2e0

static const char *const names[] = {
	"zero_only_merges_zeroes", "zero_only_switch", "zero_only_bad_input",
};

static bool all_zero(const char *p, size_t pages)
{
	for (size_t i = 0; i < pages * page_size; i++)
		if (p[i])
			return false;
	return true;
}

/* The pages of @p that map the zero page. */
static int on_zero_page(const char *p, size_t pages)
{
	char *probe = map_unfaulted(1);
	unsigned long zero;
	int n = 0;

	/* A read fault maps the zero page. */
	(void)*(volatile char *)probe;
	zero = page_pfn(probe);
	for (size_t i = 0; i < pages; i++)
		n += zero && page_pfn(p + i * page_size) == zero;
	munmap(probe, page_size);
	return n;
}

static void test_merges_zeroes(void)
{
	char *z = map_pages(NZERO), *p = map_pairs(NPAIRS, SEED);

	CHECK(ksm_write("zero_pages_only", 1) == 0, "zero_pages_only=1");
	CHECK(merge_pages(z, NZERO) == 0 && merge_pages(p, 2 * NPAIRS) == 0,
	      "madvise");
	CHECK(ksm_wait_scans(6), "scans");
	CHECK(on_zero_page(z, NZERO) == NZERO,
	      "%d of %d zero pages map the zero page", on_zero_page(z, NZERO),
	      NZERO);
	CHECK(ksm_stat(0, "ksm_zero_pages") == NZERO, "ksm_zero_pages %ld",
	      ksm_stat(0, "ksm_zero_pages"));
	CHECK(pairs_shared(p, NPAIRS) == 0 && ksm_read("pages_shared") == 0,
	      "no pair merged (%d, pages_shared %ld)",
	      pairs_shared(p, NPAIRS),
	      ksm_read("pages_shared"));
	CHECK(ksm_stat(0, "ksm_rmap_items") == 0 &&
	      ksm_read("pages_unshared") == 0,
	      "nothing tracked (ksm_rmap_items %ld, pages_unshared %ld)",
	      ksm_stat(0, "ksm_rmap_items"), ksm_read("pages_unshared"));
	CHECK(all_zero(z, NZERO) && pairs_hold(p, NPAIRS, SEED), "content");
	z[7] = 1;
	CHECK(z[7] == 1 && all_zero(z + page_size, NZERO - 1),
	      "a write to a zero-merged page");
	munmap(z, NZERO * page_size);
	munmap(p, 2 * NPAIRS * page_size);
	ktap_result(checks_passed(), "%s", names[0]);
}

static void test_switch(void)
{
	char *p = map_pairs(NPAIRS, SEED), *q, *u = map_pages(NPAIRS);

	for (int i = 0; i < NPAIRS; i++)
		fill_page(u, i, SEED + 1);
	CHECK(ksm_write("zero_pages_only", 0) == 0 &&
	      merge_pages(p, 2 * NPAIRS) == 0 && merge_pages(u, NPAIRS) == 0,
	      "full mode, madvise");
	CHECK(ksm_wait_counter("pages_sharing", NPAIRS), "pairs merge");
	CHECK(ksm_read("pages_unshared") > 0, "unique pages tracked");
	CHECK(ksm_write("zero_pages_only", 1) == 0, "zero_pages_only=1");
	CHECK(ksm_wait_scans(3), "scans");
	CHECK(pairs_shared(p, NPAIRS) == NPAIRS &&
	      pairs_hold(p, NPAIRS, SEED),
	      "merged pairs stay merged (%d)", pairs_shared(p, NPAIRS));
	CHECK(ksm_read("pages_unshared") == 0 &&
	      ksm_stat(0, "ksm_rmap_items") == 2 * NPAIRS,
	      "the rest forgotten (pages_unshared %ld, ksm_rmap_items %ld)",
	      ksm_read("pages_unshared"), ksm_stat(0, "ksm_rmap_items"));
	q = map_pairs(NPAIRS, SEED + 2);
	CHECK(ksm_write("zero_pages_only", 0) == 0 &&
	      merge_pages(q, 2 * NPAIRS) == 0, "full mode again");
	CHECK(ksm_wait_counter("pages_sharing", 2 * NPAIRS),
	      "new pairs merge");
	CHECK(pairs_shared(q, NPAIRS) == NPAIRS &&
	      pairs_hold(q, NPAIRS, SEED + 2) && pairs_hold(p, NPAIRS, SEED),
	      "content");
	munmap(p, 2 * NPAIRS * page_size);
	munmap(q, 2 * NPAIRS * page_size);
	munmap(u, NPAIRS * page_size);
	ktap_result(checks_passed(), "%s", names[1]);
}

static void test_bad_input(void)
{
	static const char *const bad[] = { "2", "-1", "x" };

	CHECK(ksm_write("zero_pages_only", 1) == 0, "zero_pages_only=1");
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(ksm_write_str("zero_pages_only", bad[i]) == -EINVAL &&
		      ksm_read("zero_pages_only") == 1,
		      "\"%s\": EINVAL, unchanged", bad[i]);
	CHECK(ksm_write("zero_pages_only", 0) == 0, "zero_pages_only=0");
	ktap_result(checks_passed(), "%s", names[2]);
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (ksm_read("zero_pages_only") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no zero_pages_only (not samepage)");
	if (!CHECK(ksm_reset() == 0, "reset"))
		return ktap_skip_all(names, ARRAY_SIZE(names), "no KSM");
	test_merges_zeroes();
	CHECK(ksm_reset() == 0, "reset");
	test_switch();
	test_bad_input();
	return ktap_finish();
}
