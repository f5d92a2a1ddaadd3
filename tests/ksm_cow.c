// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_cow.c - copy on write after merging: a write to a KSM page gives the
 * writer a private copy (counted in /proc/vmstat cow_ksm), every other
 * sharer keeps the old content, and the counters follow once ksmd looks.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

/* One process, N copies of a page: writing one breaks it out alone. */
static void test_cow_within(void)
{
	const int n = 32, victim = 5;
	char *p = map_pages(n);
	long cow;

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < n; i++)
		fill_pattern(p + i * page_size, 41, 0);
	CHECK(merge_pages(p, n) == 0, "madvise");
	CHECK(ksm_wait_counts(1, n - 1, 0, 0), "merged");
	cow = vmstat("cow_ksm");
	CHECK(cow >= 0, "cow_ksm in /proc/vmstat");
	fill_page(p, victim, 42);
	/*
	 * do_wp_page() counts cow_ksm before the copy, and a copy that
	 * finds the PTE changed meanwhile (its accessed bit cleared by
	 * aging, say) backs out and the fault comes again, counted again:
	 * at least one COW, here and below.
	 */
	CHECK(vmstat("cow_ksm") > cow, "cow_ksm %ld -> %ld", cow,
	      vmstat("cow_ksm"));
	CHECK(page_holds(p, victim, 42), "written page");
	for (int i = 0; i < n; i++)
		if (i != victim)
			CHECK(holds_pattern(p + i * page_size, 41, 0),
			      "page %d", i);
	/* The copy is a unique page now: one fewer sharer, one unshared. */
	CHECK(ksm_wait_counts(1, n - 2, 1, 0), "after cow");
	CHECK(self_merging_pages() == n - 1, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(page_holds(p, victim, 42), "written page kept");
	munmap(p, n * page_size);
	ktap_result(checks_passed(), "cow_within_one_process");
}

#define N 32
#define W 8

/*
 * Each child maps N distinct pages (seed 43), the same in all. On 'w' it
 * writes the first W with seed 44; on 'c' it checks its pages hold what it
 * wrote last, replying 'k' or 'x'.
 */
static int kid_cow(void *arg, int i, int cmd, int reply)
{
	char *p = map_pages(N);
	bool written = false;
	char c;

	for (int j = 0; j < N; j++)
		fill_page(p, j, 43);
	if (merge_pages(p, N))
		return 1;
	kid_reply(reply, 'r');
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		size_t bad = 0;

		if (c == 'w') {
			for (int j = 0; j < W; j++)
				fill_page(p, j, 44);
			written = true;
		}
		for (int j = 0; j < N; j++)
			bad += !page_holds(p, j, written && j < W ? 44 : 43);
		kid_reply(reply, bad ? 'x' : 'k');
	}
	return 0;
}

static void check_kids(struct kids *k)
{
	char replies[3];

	CHECK(kids_sync(k, 'c', replies), "sync");
	for (int i = 0; i < k->n; i++)
		CHECK(replies[i] == 'k', "child %d content (%c)", i, replies[i]);
}

/*
 * Three processes share N KSM pages. Child 0 writes W of them: W COWs,
 * sharing drops by W, its copies (unique) become unshared. Child 1 writes
 * the same W with the same new content: W more COWs, and the two copies of
 * each merge into W new KSM pages, while child 2 alone keeps the old W.
 */
static void test_cow_across(void)
{
	struct kids k;
	char r;
	long cow;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(kids_start(&k, 3, kid_cow, NULL) == 0, "fork");
	CHECK(kids_collect(&k, NULL), "ready");
	CHECK(ksm_wait_counts(N, 2 * N, 0, 0), "merged");
	check_kids(&k);

	cow = vmstat("cow_ksm");
	CHECK(kid_call(&k, 0, 'w', &r) && r == 'k', "child 0 writes (%c)", r);
	CHECK(vmstat("cow_ksm") >= cow + W, "cow_ksm %ld -> %ld, want +%d",
	      cow, vmstat("cow_ksm"), W);
	check_kids(&k);
	CHECK(ksm_wait_counts(N, 2 * N - W, W, 0), "after child 0 writes");

	cow = vmstat("cow_ksm");
	CHECK(kid_call(&k, 1, 'w', &r) && r == 'k', "child 1 writes (%c)", r);
	CHECK(vmstat("cow_ksm") >= cow + W, "cow_ksm %ld -> %ld, want +%d",
	      cow, vmstat("cow_ksm"), W);
	CHECK(ksm_wait_counts(N + W, 2 * N - W, 0, 0), "after child 1 writes");
	check_kids(&k);

	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	ktap_result(checks_passed(), "cow_across_3_processes");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(2);
	test_cow_within();
	test_cow_across();
	return ktap_finish();
}
