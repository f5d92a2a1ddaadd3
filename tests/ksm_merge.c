// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_merge.c - merging: identical pages within one process and across
 * several, with page content and the counters of ksm.rst checked.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define PAGES 64
#define KIDS 3

/* Within one process: PAGES copies of one page make one KSM page. */
static void test_merge_within(void)
{
	char *p = map_pages(PAGES);

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < PAGES; i++) {
		fill_page(p, 0, 7);
		memcpy(p + i * page_size, p, page_size);
	}
	CHECK(merge_pages(p, PAGES) == 0, "madvise");
	CHECK(ksm_wait_counter("pages_sharing", PAGES - 1), "pages_sharing");
	CHECK(ksm_read("pages_shared") == 1, "pages_shared %ld",
	      ksm_read("pages_shared"));
	CHECK(self_merging_pages() == PAGES, "ksm_merging_pages %ld",
	      self_merging_pages());
	for (int i = 0; i < PAGES; i++)
		CHECK(!memcmp(p + i * page_size, p, page_size), "page %d", i);
	CHECK(page_holds(p, 0, 7), "content");
	munmap(p, PAGES * page_size);
	ktap_result(checks_passed(), "merge_within_one_process");
}

static int kid_same(void *arg, int i, int cmd, int reply)
{
	char *p = map_pages(PAGES);

	for (int j = 0; j < PAGES; j++)
		fill_page(p, j, 11);
	if (merge_pages(p, PAGES))
		return 1;
	kid_reply(reply, 'r');
	kid_wait_cmd(cmd);
	kid_reply(reply, pages_wrong(p, PAGES, 11) ? 'x' :
		  self_merging_pages() == PAGES ? 'm' : 'u');
	kid_wait_cmd(cmd);
	return 0;
}

/* KIDS processes with the same PAGES distinct pages share PAGES KSM pages. */
static void test_merge_across(void)
{
	char replies[KIDS], ready[KIDS];
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(kids_start(&k, KIDS, kid_same, NULL) == 0, "fork");
	for (int i = 0; i < KIDS; i++)
		CHECK(read(k.from_kid[i], &ready[i], 1) == 1, "ready");
	CHECK(ksm_wait_counter("pages_sharing", (KIDS - 1) * PAGES),
	      "pages_sharing");
	CHECK(ksm_read("pages_shared") == PAGES, "pages_shared %ld",
	      ksm_read("pages_shared"));
	CHECK(kids_sync(&k, 'c', replies), "sync");
	for (int i = 0; i < KIDS; i++)
		CHECK(replies[i] == 'm', "child %d replied %c", i, replies[i]);
	kids_sync(&k, 'q', NULL);
	CHECK(kids_wait(&k), "children exit");
	ktap_result(checks_passed(), "merge_across_%d_processes", KIDS);
}

int main(void)
{
	ktap_plan(2);
	test_merge_within();
	test_merge_across();
	return ktap_finish();
}
