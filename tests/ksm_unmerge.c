// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_unmerge.c - taking pages back out of KSM with their content intact:
 * MADV_UNMERGEABLE on an area, run=2 for everything, and run=0, which
 * stops ksmd but keeps what is merged.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define N 64

static int unmerge_pages(void *addr, size_t pages)
{
	return madvise(addr, pages * page_size, MADV_UNMERGEABLE) ? -1 : 0;
}

/*
 * Regions A and B hold the same N pages and merge; C holds N unique pages,
 * so that ksmd keeps scanning. MADV_UNMERGEABLE breaks every KSM page of
 * the area at once (one cow_ksm each), and ksmd then drops its rmap_items:
 * after A, B's pages are KSM pages no one shares (shared N, sharing 0);
 * after B too, nothing is shared, and nothing merges again.
 */
static void test_madv_unmergeable(void)
{
	char *a = map_pages(N), *b = map_pages(N), *c = map_pages(N);
	long cow;

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < N; i++) {
		fill_page(a, i, 61);
		fill_page(b, i, 61);
		fill_page(c, i, 62);
	}
	CHECK(merge_pages(a, N) == 0 && merge_pages(b, N) == 0 &&
	      merge_pages(c, N) == 0, "madvise");
	CHECK(ksm_wait_counts(N, N, N, 0), "merged");

	cow = vmstat("cow_ksm");
	CHECK(unmerge_pages(a, N) == 0, "MADV_UNMERGEABLE a");
	CHECK(vmstat("cow_ksm") == cow + N, "cow_ksm %ld -> %ld, want +%d",
	      cow, vmstat("cow_ksm"), N);
	CHECK(pages_wrong(a, N, 61) == 0, "content a");
	CHECK(ksm_wait_counts(N, 0, N, 0), "a unmerged");
	CHECK(self_merging_pages() == N, "ksm_merging_pages %ld",
	      self_merging_pages());

	cow = vmstat("cow_ksm");
	CHECK(unmerge_pages(b, N) == 0, "MADV_UNMERGEABLE b");
	CHECK(vmstat("cow_ksm") == cow + N, "cow_ksm %ld -> %ld, want +%d",
	      cow, vmstat("cow_ksm"), N);
	CHECK(ksm_wait_counts(0, 0, N, 0), "b unmerged");
	CHECK(ksm_wait_scans(3), "scans");
	CHECK(ksm_wait_counts(0, 0, N, 0), "stays unmerged");
	CHECK(self_merging_pages() == 0, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(pages_wrong(a, N, 61) == 0, "content a");
	CHECK(pages_wrong(b, N, 61) == 0, "content b");
	CHECK(pages_wrong(c, N, 62) == 0, "content c");
	/* The pages are private again: writes land, one copy each. */
	for (int i = 0; i < N; i++) {
		fill_page(a, i, 63);
		fill_page(b, i, 64);
	}
	CHECK(pages_wrong(a, N, 63) == 0 && pages_wrong(b, N, 64) == 0,
	      "writes");
	munmap(a, N * page_size);
	munmap(b, N * page_size);
	munmap(c, N * page_size);
	ktap_result(checks_passed(), "madv_unmergeable_restores_pages");
}

/*
 * Each child maps N distinct pages, the same in all, with seed 65. 'c'
 * checks them ('k'/'x'), 'w' rewrites them with seed 66 and checks, 'm'
 * reports ksm_merging_pages ('0', 'N' or '?').
 */
static int kid_pages(void *arg, int i, int cmd, int reply)
{
	char *p = map_pages(N);
	unsigned int seed = 65;
	long merging;
	char c;

	for (int j = 0; j < N; j++)
		fill_page(p, j, seed);
	if (merge_pages(p, N))
		return 1;
	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		if (c == 'm') {
			merging = self_merging_pages();
			kid_reply(reply, merging == 0 ? '0' :
				  merging == N ? 'N' : '?');
			continue;
		}
		if (c == 'w') {
			seed = 66;
			for (int j = 0; j < N; j++)
				fill_page(p, j, seed);
		}
		kid_reply(reply, pages_wrong(p, N, seed) ? 'x' : 'k');
	}
	return 0;
}

static void expect_replies(struct kids *k, char cmd, char want)
{
	char replies[3];

	CHECK(kids_sync(k, cmd, replies), "sync %c", cmd);
	for (int i = 0; i < k->n; i++)
		CHECK(replies[i] == want, "child %d: %c -> %c, want %c", i,
		      cmd, replies[i], want);
}

/*
 * run=2 unmerges everything before the write returns: every mapping of a
 * KSM page is copied (3N cow_ksm), all counters and full_scans are 0. The
 * areas stay registered: after the children rewrite their pages (the same
 * in all), run=1 merges them again.
 */
static void test_run2(void)
{
	struct ksm_counts c;
	struct kids k;
	long cow;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(kids_start(&k, 3, kid_pages, NULL) == 0, "fork");
	CHECK(kids_collect(&k, NULL), "ready");
	CHECK(ksm_wait_counts(N, 2 * N, 0, 0), "merged");
	expect_replies(&k, 'm', 'N');

	cow = vmstat("cow_ksm");
	CHECK(ksm_write("run", 2) == 0, "run=2");
	ksm_get_counts(&c);
	CHECK(c.shared == 0 && c.sharing == 0 && c.unshared == 0 &&
	      c.volatile_ == 0 && c.full_scans == 0,
	      "after run=2: shared %ld sharing %ld unshared %ld volatile %ld full_scans %ld",
	      c.shared, c.sharing, c.unshared, c.volatile_, c.full_scans);
	CHECK(vmstat("cow_ksm") == cow + 3 * N, "cow_ksm %ld -> %ld, want +%d",
	      cow, vmstat("cow_ksm"), 3 * N);
	CHECK(ksm_read("run") == 2, "run reads %ld", ksm_read("run"));
	expect_replies(&k, 'm', '0');
	expect_replies(&k, 'c', 'k');
	expect_replies(&k, 'w', 'k');

	CHECK(ksm_write("run", 1) == 0, "run=1");
	CHECK(ksm_wait_counts(N, 2 * N, 0, 0), "merged again");
	expect_replies(&k, 'm', 'N');
	expect_replies(&k, 'c', 'k');
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	ktap_result(checks_passed(), "run2_unmerges_all_and_remerges");
}

/*
 * run=2 after every mapping of a KSM page was copied on write while ksmd
 * was stopped: the KSM page has gone, and what ksmd still holds of it
 * (one KSM page that one process mapped N times) goes with no trace; each
 * page keeps what was written to it, and the area merges again.
 */
static void test_run2_after_cow(void)
{
	char *p = map_pages(N);
	struct ksm_counts c;

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < N; i++)
		fill_pattern(p + i * page_size, 69, 0);
	CHECK(merge_pages(p, N) == 0, "madvise");
	CHECK(ksm_wait_counts(1, N - 1, 0, 0), "merged");
	CHECK(ksm_pause() == 0, "run=0");
	for (int i = 0; i < N; i++)
		fill_page(p, i, 70);
	CHECK(ksm_write("run", 2) == 0, "run=2");
	ksm_get_counts(&c);
	CHECK(c.shared == 0 && c.sharing == 0 && c.unshared == 0 &&
	      c.volatile_ == 0,
	      "after run=2: shared %ld sharing %ld unshared %ld volatile %ld",
	      c.shared, c.sharing, c.unshared, c.volatile_);
	CHECK(ksm_stat(0, "ksm_merging_pages") == 0 &&
	      ksm_stat(0, "ksm_rmap_items") == 0,
	      "ksm_stat: merging %ld rmap_items %ld",
	      ksm_stat(0, "ksm_merging_pages"), ksm_stat(0, "ksm_rmap_items"));
	CHECK(pages_wrong(p, N, 70) == 0, "content after run=2");
	for (int i = 0; i < N; i++)
		fill_pattern(p + i * page_size, 71, 0);
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_counts(1, N - 1, 0, 0), "merged again");
	for (int i = 0; i < N; i++)
		CHECK(holds_pattern(p + i * page_size, 71, 0), "page %d", i);
	munmap(p, N * page_size);
	ktap_result(checks_passed(), "run2_after_every_mapping_copied");
}

/*
 * run=0 stops ksmd and keeps merged pages merged; a COW while stopped is
 * not accounted until ksmd runs again.
 */
static void test_run0(void)
{
	char *p = map_pages(2 * N), *q = p + N * page_size;
	struct ksm_counts c;
	long cow;

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < N; i++) {
		fill_page(p, i, 67);
		fill_page(q, i, 67);
	}
	CHECK(merge_pages(p, 2 * N) == 0, "madvise");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merged");
	CHECK(ksm_pause() == 0, "run=0");
	ksm_get_counts(&c);
	CHECK(c.shared == N && c.sharing == N, "stopped: shared %ld sharing %ld",
	      c.shared, c.sharing);
	CHECK(self_merging_pages() == 2 * N, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(pages_wrong(p, N, 67) == 0 && pages_wrong(q, N, 67) == 0,
	      "content");
	cow = vmstat("cow_ksm");
	fill_page(q, 0, 68);
	CHECK(vmstat("cow_ksm") == cow + 1, "cow_ksm %ld -> %ld", cow,
	      vmstat("cow_ksm"));
	CHECK(page_holds(q, 0, 68) && page_holds(p, 0, 67), "cow content");
	CHECK(ksm_read("pages_sharing") == N, "pages_sharing %ld while stopped",
	      ksm_read("pages_sharing"));
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_counts(N, N - 1, 1, 0), "accounted after run=1");
	CHECK(pages_wrong(p, N, 67) == 0, "content p");
	for (int i = 1; i < N; i++)
		CHECK(page_holds(q, i, 67), "page %d", i);
	munmap(p, 2 * N * page_size);
	ktap_result(checks_passed(), "run0_keeps_merged_pages");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(4);
	test_madv_unmergeable();
	test_run2();
	test_run2_after_cow();
	test_run0();
	return ktap_finish();
}
