// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_swap.c - KSM pages are reclaimable like any anonymous memory.
 *
 * K child processes hold the same N pages, merged into N KSM pages. The
 * children live in a memory cgroup of their own (they join it before
 * touching their pages, so the pages are charged to it), and writes to its
 * memory.reclaim push the KSM pages out to swap (MADV_PAGEOUT would not:
 * it skips pages mapped more than once). /proc/PID/pagemap of every child
 * must then show each merged address swapped, all sharers of a KSM page on
 * the same swap slot, and pswpout must have grown.
 *
 * Swap-in: one child write-faults a few pages straight from swap, every
 * child reads all of its pages back with their content, a second child
 * writes a few more and the others keep theirs; ksmd then merges what is
 * still identical again. Last, KSM pages are swapped out and everything is
 * unmerged (run=2) while they are in swap: the swap-in still gives every
 * child its content. vmstat ksm_swpin_copy is reported, not required.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define N	64	/* pages per child */
#define K	3	/* children */
#define W	8	/* pages a writer writes */
#define SEED	0x5a00

#define CG	CGROUP_ROOT "/ksm_swap_test"

/* KSM pages seen in swap, over both swap-outs (for the lead's report). */
static long swapped_ksm_pages;

static long merging_pages(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ksm_merging_pages", pid);
	return read_long(path);
}

/*
 * The children's region: mapped (not touched) by the parent before the
 * fork, so it is at the same address in every child and the parent can
 * read the children's pagemap for it; each child faults its own pages in.
 */
static char *region;
static unsigned int kid_seed;

/* The seed page @j of child @i should hold. */
static unsigned int seed_of(int i, int j, const bool written[K])
{
	if (written[i] && j >= i * W && j < (i + 1) * W)
		return kid_seed + 1 + i;
	return kid_seed;
}

/*
 * A child: joins the cgroup, fills and madvises its pages, replies 'r'
 * (or 'e'). Then 'c' checks every page ('k'/'x'), 'w' writes its own W
 * pages (child i: pages [iW, (i+1)W)) with seed + 1 + i and checks all.
 */
static int swap_kid(void *arg, int i, int cmd, int reply)
{
	bool written[K] = { false };
	char c;

	(void)arg;
	if (!kid_load_merged(CG, region, N, kid_seed, reply))
		return 1;
	while ((c = kid_wait_cmd(cmd)) != 'q') {
		int bad = 0;

		if (c == 'w') {
			for (int j = i * W; j < (i + 1) * W; j++)
				fill_page(region, j, kid_seed + 1 + i);
			written[i] = true;
		}
		for (int j = 0; j < N; j++)
			bad += !page_holds(region, j, seed_of(i, j, written));
		kid_reply(reply, bad ? 'x' : 'k');
	}
	return 0;
}

/* Start the children with @seed and wait until their pages are merged. */
static bool kids_merged(struct kids *k, unsigned int seed)
{
	char r[K];

	kid_seed = seed;
	if (!CHECK(kids_start(k, K, swap_kid, NULL) == 0, "fork"))
		return false;
	if (!CHECK(kids_collect(k, r), "children ready"))
		return false;
	for (int i = 0; i < K; i++)
		if (!CHECK(r[i] == 'r', "child %d setup (%c)", i, r[i]))
			return false;
	if (!CHECK(ksm_wait_counts(N, (K - 1) * N, 0, 0), "merged"))
		return false;
	for (int j = 0; j < N; j++) {
		char *addr = region + j * page_size;
		unsigned long pfn = pid_pfn(k->pid[0], addr);

		for (int i = 1; i < K; i++)
			CHECK(pfn && pid_pfn(k->pid[i], addr) == pfn,
			      "page %d: child %d frame %lx, child 0 %lx", j, i,
			      pid_pfn(k->pid[i], addr), pfn);
	}
	return true;
}

static void kids_stop(struct kids *k)
{
	kids_send(k, 'q');
	CHECK(kids_wait(k), "children exit");
}

/* Every child checks its pages; true if all replied 'k'. */
static bool kids_content(struct kids *k)
{
	return kids_sync_all(k, 'c', 'k');
}

static int ksm_pages_swapped(struct kids *k, int *present)
{
	return shared_pages_swapped(k->pid, K, region, N, present);
}

/*
 * Reclaim from the cgroup until all N KSM pages are in swap, in a bounded
 * number of rounds. Asking for more than the cgroup holds makes each write
 * reclaim all it can (and fail with EAGAIN). A first pass often only
 * clears the young bits of the shared pages and moves them to the inactive
 * list; reading memory.stat first flushes the statistics that reclaim
 * balances its lists by.
 */
static void swap_out(struct kids *k)
{
	int swapped = 0, present = 0, round;
	long cur = read_long(CG "/memory.current");

	for (round = 1;; round++) {
		int err;

		key_value(CG "/memory.stat", "anon");
		err = write_file(CG "/memory.reclaim", "64M swappiness=200");
		if (err == -EINVAL)	/* no swappiness= key */
			err = write_file(CG "/memory.reclaim", "64M");
		if (err && err != -EAGAIN)
			ktap_diag("memory.reclaim: %s", strerror(-err));
		swapped = ksm_pages_swapped(k, &present);
		if (swapped == N || round == 40)
			break;
		usleep(50000);	/* pacing only: the check above decides */
	}
	ktap_diag("%d of %d KSM pages swapped out in %d rounds (%d PTEs present); memory.current %ld -> %ld",
		  swapped, N, round, present, cur,
		  read_long(CG "/memory.current"));
	swapped_ksm_pages += swapped;
	CHECK(swapped == N, "%d of %d KSM pages in swap", swapped, N);
}

static void diag_counts(const char *when)
{
	struct ksm_counts c;

	ksm_get_counts(&c);
	ktap_diag("%s: shared %ld sharing %ld unshared %ld", when, c.shared,
		  c.sharing, c.unshared);
}

static struct kids kids;
static bool kids_up;	/* the children of the first three tests run */

/*
 * The merged pages of all children go out to swap: every sharer's PTE of
 * page j is the same swap entry, and pswpout grew by at least N.
 */
static void test_swap_out(void)
{
	long out = vmstat("pswpout");

	CHECK(ksm_reset() == 0, "reset");
	kids_up = kids_merged(&kids, SEED);
	if (!kids_up) {
		ktap_result(checks_passed(), "ksm_pages_swap_out");
		return;
	}
	swap_out(&kids);
	CHECK(vmstat("pswpout") - out >= N, "pswpout %ld -> %ld, want +%d",
	      out, vmstat("pswpout"), N);
	diag_counts("while in swap");
	ktap_result(checks_passed(), "ksm_pages_swap_out");
}

/*
 * Child 0 write-faults its W pages straight from swap; then every child
 * reads every page back; then child 1 writes its W pages. Each child
 * always finds its own content, whatever the others did.
 */
static void test_swap_in(void)
{
	long copies = vmstat("ksm_swpin_copy"), in = vmstat("pswpin");
	int present = 0;
	char r;

	if (!CHECK(kids_up, "no merged children")) {
		ktap_result(false, "swap_in_content_and_cow");
		return;
	}
	CHECK(kid_call(&kids, 0, 'w', &r) && r == 'k',
	      "child 0 writes from swap (%c)", r);
	CHECK(kids_content(&kids), "every child reads its pages back");
	ksm_pages_swapped(&kids, &present);
	CHECK(present == K * N, "%d of %d PTEs present after swap-in", present,
	      K * N);
	CHECK(kid_call(&kids, 1, 'w', &r) && r == 'k', "child 1 writes (%c)",
	      r);
	CHECK(kids_content(&kids), "content after child 1's write");
	ktap_diag("ksm_swpin_copy %ld -> %ld, pswpin %ld -> %ld", copies,
		  vmstat("ksm_swpin_copy"), in, vmstat("pswpin"));
	ktap_result(checks_passed(), "swap_in_content_and_cow");
}

/*
 * ksmd merges what is identical again: page j of the children that did
 * not write it shares one frame; the two writers' W pages are unique.
 */
static void test_remerge(void)
{
	if (!CHECK(kids_up, "no merged children")) {
		kids_stop(&kids);
		ktap_result(false, "remerge_after_swap_in");
		return;
	}
	CHECK(ksm_wait_counts(N, (K - 1) * N - 2 * W, 2 * W, 0),
	      "merged again");
	for (int j = 0; j < N; j++) {
		int writer = j < W ? 0 : j < 2 * W ? 1 : -1;
		unsigned long pfn = 0;

		for (int i = 0; i < K; i++) {
			unsigned long f = pid_pfn(kids.pid[i],
						  region + j * page_size);

			if (i == writer)
				continue;
			if (!pfn)
				pfn = f;
			CHECK(f && f == pfn,
			      "page %d child %d: frame %lx, want %lx", j, i, f,
			      pfn);
		}
		if (writer >= 0)
			CHECK(pid_pfn(kids.pid[writer],
				      region + j * page_size) != pfn,
			      "page %d: writer %d shares", j, writer);
	}
	CHECK(kids_content(&kids), "content after merging again");
	kids_stop(&kids);
	ktap_result(checks_passed(), "remerge_after_swap_in");
}

/*
 * KSM pages in swap, then run=2 unmerges everything: no KSM page is
 * left, and swapping in gives every child its content, in a frame of its
 * own.
 */
static void test_unmerge_swapped(void)
{
	long copies;
	int present = 0;

	CHECK(ksm_reset() == 0, "reset");
	if (!kids_merged(&kids, SEED + 0x10)) {
		kids_stop(&kids);
		ktap_result(checks_passed(), "unmerge_while_swapped");
		return;
	}
	swap_out(&kids);
	CHECK(ksm_write("run", 2) == 0, "run=2");
	diag_counts("after run=2");
	CHECK(ksm_read("pages_shared") == 0 && ksm_read("pages_sharing") == 0,
	      "KSM pages left: shared %ld sharing %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
	copies = vmstat("ksm_swpin_copy");
	CHECK(kids_content(&kids), "every child reads its pages back");
	ktap_diag("ksm_swpin_copy %ld -> %ld", copies,
		  vmstat("ksm_swpin_copy"));
	ksm_pages_swapped(&kids, &present);
	CHECK(present == K * N, "%d of %d PTEs present", present, K * N);
	for (int i = 0; i < K; i++)
		CHECK(merging_pages(kids.pid[i]) == 0,
		      "child %d ksm_merging_pages %ld", i,
		      merging_pages(kids.pid[i]));
	for (int j = 0; j < N; j++)
		for (int i = 1; i < K; i++)
			CHECK(pid_pfn(kids.pid[i], region + j * page_size) !=
			      pid_pfn(kids.pid[0], region + j * page_size),
			      "page %d: child %d still shares with child 0",
			      j, i);
	kids_stop(&kids);
	ktap_result(checks_passed(), "unmerge_while_swapped");
}

int main(void)
{
	static const char *const names[] = {
		"ksm_pages_swap_out", "swap_in_content_and_cow",
		"remerge_after_swap_in", "unmerge_while_swapped",
	};
	const char *why;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	why = swap_memcg_setup(CG);
	if (why)
		return ktap_skip_all(names, ARRAY_SIZE(names), why);
	region = map_unfaulted(N);

	test_swap_out();
	test_swap_in();
	test_remerge();
	test_unmerge_swapped();
	ktap_diag("swapped_ksm_pages %ld", swapped_ksm_pages);
	ksm_reset();
	cgroup_remove(CG);
	return ktap_finish();
}
