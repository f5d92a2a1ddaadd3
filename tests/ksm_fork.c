// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_fork.c - merged pages across fork and exit: a child inherits the KSM
 * pages and shares them once ksmd has seen it, its COW leaves the parent
 * alone, and a sharer exiting drops pages_sharing while the others keep
 * their content.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define N 32
#define W 8

struct regions {
	char *a, *b;
};

/*
 * The forked child: 'c' checks A and B ('k'/'x'), 'm' reports whether
 * ksm_merging_pages is 2N ('y'/'n'), 'w' writes the first W pages of A
 * with seed 72 and checks all.
 */
static int kid_forked(void *arg, int i, int cmd, int reply)
{
	struct regions *r = arg;
	bool written = false;
	char c;

	while ((c = kid_wait_cmd(cmd)) != 'q') {
		size_t bad = 0;

		if (c == 'm') {
			kid_reply(reply, self_merging_pages() == 2 * N ?
				  'y' : 'n');
			continue;
		}
		if (c == 'w') {
			for (int j = 0; j < W; j++)
				fill_page(r->a, j, 72);
			written = true;
		}
		for (int j = 0; j < N; j++)
			bad += !page_holds(r->a, j, written && j < W ? 72 : 71);
		bad += pages_wrong(r->b, N, 71);
		kid_reply(reply, bad ? 'x' : 'k');
	}
	return 0;
}

/*
 * The parent's regions A and B hold the same N pages, merged (shared N,
 * sharing N). Its child maps the same KSM pages: sharing 3N once scanned.
 * The child's write to W pages of A: W cow_ksm, sharing 3N - W, W unique
 * pages unshared. The child exiting: back to shared N, sharing N.
 */
static void test_fork(void)
{
	struct regions r = { map_pages(N), map_pages(N) };
	struct kids k;
	long cow;
	char c;

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < N; i++) {
		fill_page(r.a, i, 71);
		fill_page(r.b, i, 71);
	}
	CHECK(merge_pages(r.a, N) == 0 && merge_pages(r.b, N) == 0, "madvise");
	CHECK(ksm_wait_counts(N, N, 0, 0), "merged");

	CHECK(kids_start(&k, 1, kid_forked, &r) == 0, "fork");
	CHECK(kid_call(&k, 0, 'c', &c) && c == 'k', "child content (%c)", c);
	CHECK(ksm_wait_counts(N, 3 * N, 0, 0), "child shares");
	CHECK(kid_call(&k, 0, 'm', &c) && c == 'y', "child merging pages (%c)",
	      c);
	CHECK(self_merging_pages() == 2 * N, "parent merging pages %ld",
	      self_merging_pages());

	/* ksmd still: a fault that loses a race with it is counted twice. */
	CHECK(ksm_pause() == 0, "run=0");
	cow = vmstat("cow_ksm");
	CHECK(kid_call(&k, 0, 'w', &c) && c == 'k', "child writes (%c)", c);
	CHECK(vmstat("cow_ksm") == cow + W, "cow_ksm %ld -> %ld, want +%d",
	      cow, vmstat("cow_ksm"), W);
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(pages_wrong(r.a, N, 71) == 0 && pages_wrong(r.b, N, 71) == 0,
	      "parent content after child's cow");
	CHECK(ksm_wait_counts(N, 3 * N - W, W, 0), "after child's cow");
	CHECK(kid_call(&k, 0, 'c', &c) && c == 'k', "child content (%c)", c);

	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "child exits");
	CHECK(ksm_wait_counts(N, N, 0, 0), "after child's exit");
	CHECK(pages_wrong(r.a, N, 71) == 0 && pages_wrong(r.b, N, 71) == 0,
	      "parent content after child's exit");
	CHECK(self_merging_pages() == 2 * N, "parent merging pages %ld",
	      self_merging_pages());
	munmap(r.a, N * page_size);
	munmap(r.b, N * page_size);
	ktap_result(checks_passed(), "fork_child_shares_and_cows");
}

/* N distinct pages, the same in every child; 'c' checks ('k'/'x'). */
static int kid_sharer(void *arg, int i, int cmd, int reply)
{
	char *p = map_pages(N);

	for (int j = 0; j < N; j++)
		fill_page(p, j, 73);
	if (merge_pages(p, N))
		return 1;
	kid_reply(reply, 'r');
	while (kid_wait_cmd(cmd) == 'c')
		kid_reply(reply, pages_wrong(p, N, 73) ? 'x' :
			  self_merging_pages() == N ? 'k' : 'u');
	return 0;
}

/*
 * Three sharers of N KSM pages exit one by one: sharing 2N -> N -> 0 with
 * shared N (the last one's pages stay KSM pages), then nothing at all.
 */
static void test_exit(void)
{
	const long shared[3] = { N, N, 0 }, sharing[3] = { N, 0, 0 };
	struct kids k;
	char c;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(kids_start(&k, 3, kid_sharer, NULL) == 0, "fork");
	CHECK(kids_collect(&k, NULL), "ready");
	CHECK(ksm_wait_counts(N, 2 * N, 0, 0), "merged");
	for (int i = 0; i < 3; i++) {
		CHECK(kid_send(&k, i, 'q'), "child %d quits", i);
		CHECK(kid_reap(&k, i), "child %d exit status", i);
		CHECK(ksm_wait_counts(shared[i], sharing[i], 0, 0),
		      "after child %d exits", i);
		for (int j = i + 1; j < 3; j++)
			CHECK(kid_call(&k, j, 'c', &c) && c == 'k',
			      "child %d content after child %d exits (%c)",
			      j, i, c);
	}
	CHECK(kids_wait(&k), "children");
	ktap_result(checks_passed(), "exit_drops_sharing");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(2);
	test_fork();
	test_exit();
	return ktap_finish();
}
