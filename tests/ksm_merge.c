// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_merge.c - merging: identical pages within one process and across
 * several, only in MADV_MERGEABLE areas, with page content and the counters
 * of ksm.rst checked.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define PAGES 64

/* Within one process: PAGES copies of one page make one KSM page. */
static void test_merge_within(void)
{
	char *p = map_pages(PAGES);

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < PAGES; i++)
		fill_pattern(p + i * page_size, 7, 0);
	CHECK(merge_pages(p, PAGES) == 0, "madvise");
	CHECK(ksm_wait_counts(1, PAGES - 1, 0, 0), "one KSM page, %d sharers",
	      PAGES);
	CHECK(self_merging_pages() == PAGES, "ksm_merging_pages %ld",
	      self_merging_pages());
	for (int i = 0; i < PAGES; i++)
		CHECK(holds_pattern(p + i * page_size, 7, 0), "page %d", i);
	munmap(p, PAGES * page_size);
	ktap_result(checks_passed(), "merge_within_one_process");
}

struct same_arg {
	int pages;
	unsigned int seed;
};

/* Map @pages distinct pages, the same in every child; report on 'c'. */
static int kid_same(void *arg, int i, int cmd, int reply)
{
	struct same_arg *a = arg;
	char *p = map_pages(a->pages);

	for (int j = 0; j < a->pages; j++)
		fill_page(p, j, a->seed);
	if (merge_pages(p, a->pages))
		return 1;
	kid_reply(reply, 'r');
	while (kid_wait_cmd(cmd) == 'c')
		kid_reply(reply, pages_wrong(p, a->pages, a->seed) ? 'x' :
			  self_merging_pages() == a->pages ? 'm' : 'u');
	return 0;
}

/* @kids processes with the same @pages distinct pages share @pages KSM pages. */
static void test_merge_across(int kids, int pages)
{
	struct same_arg arg = { pages, 11 };
	char replies[64];
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(kids_start(&k, kids, kid_same, &arg) == 0, "fork");
	CHECK(kids_collect(&k, replies), "ready");
	CHECK(ksm_wait_counts(pages, (kids - 1) * pages, 0, 0),
	      "%d KSM pages, %d sharers each", pages, kids);
	CHECK(kids_sync(&k, 'c', replies), "sync");
	for (int i = 0; i < kids; i++)
		CHECK(replies[i] == 'm', "child %d replied %c", i, replies[i]);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	ktap_result(checks_passed(), "merge_across_%d_processes", kids);
}

/*
 * Only MADV_MERGEABLE areas are scanned: a copy of a mergeable area left
 * without the advice merges with nothing, until it gets the advice too.
 */
static void test_unadvised(void)
{
	char *a = map_pages(PAGES), *b = map_pages(PAGES);

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < PAGES; i++) {
		fill_page(a, i, 21);
		fill_page(b, i, 21);
	}
	CHECK(merge_pages(a, PAGES) == 0, "madvise");
	CHECK(ksm_wait_counts(0, 0, PAGES, 0), "advised pages unshared");
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_wait_counts(0, 0, PAGES, 0), "still unshared");
	CHECK(self_merging_pages() == 0, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(merge_pages(b, PAGES) == 0, "madvise");
	CHECK(ksm_wait_counts(PAGES, PAGES, 0, 0), "merged once advised");
	CHECK(pages_wrong(a, PAGES, 21) == 0, "content a");
	CHECK(pages_wrong(b, PAGES, 21) == 0, "content b");
	munmap(a, PAGES * page_size);
	munmap(b, PAGES * page_size);
	ktap_result(checks_passed(), "unadvised_pages_not_merged");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(4);
	test_merge_within();
	test_merge_across(3, PAGES);
	test_merge_across(6, 32);
	test_unadvised();
	return ktap_finish();
}
