// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_mglru.c - KSM pages under the multi-gen LRU and zswap, as Debian's
 * kernels have them (CONFIG_LRU_GEN_ENABLED; zswap built in, which a host
 * turns on): MGLRU ages pages by walking page tables, KSM pages' included,
 * and under memory pressure the oldest generation goes out, here to
 * zswap.
 *
 * K child processes in a memory cgroup hold the same N pages, merged into
 * N KSM pages. The cgroup's memory.max is then set below what they use,
 * and child 0 keeps writing a buffer of its own: the allocations reclaim,
 * the buffer stays young and the KSM pages, untouched, age out.
 *
 * - mglru_zswap_out: every sharer of every KSM page shows the same swap
 *   entry in its pagemap, and zswap stored pages (zswpout grew).
 * - mglru_zswap_in: with the limit lifted, every child reads its pages
 *   back right; ksmd then has all of them merged again, and the counters
 *   and each child's ksm_merging_pages say so.
 *
 * lru_gen and zswap are turned on for the run and restored. Skipped
 * without CONFIG_LRU_GEN, CONFIG_ZSWAP, swap or the memory controller.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define N		128	/* pages per child */
#define K		3	/* children */
#define HOT		2048	/* pages of child 0's buffer: 8 MiB */
#define SEED		0x6c00
#define ROUNDS		40

#define CG		CGROUP_ROOT "/ksm_mglru_test"
#define LRU_GEN		"/sys/kernel/mm/lru_gen/enabled"
#define ZSWAP		"/sys/module/zswap/parameters/enabled"

static char saved_lru_gen[32], saved_zswap[8];
static char *region;	/* mapped before the fork: one address in all */
static struct kids kids;
static bool kids_up;

/*
 * A child: joins the cgroup, fills and madvises its N pages, replies 'r'
 * (or 'e'). Then 'p' writes all of its hot buffer (child 0) and nothing
 * else, 'c' checks every page ('k' or 'x'), 'q' ends.
 */
static int mglru_kid(void *arg, int i, int cmd, int reply)
{
	char *hot = NULL;

	(void)arg;
	(void)i;
	if (!kid_load_merged(CG, region, N, SEED, reply))
		return 1;
	for (;;) {
		switch (kid_wait_cmd(cmd)) {
		case 'p':
			/* The buffer only: a read would keep the pages young. */
			if (!hot)
				hot = map_unfaulted(HOT);
			for (size_t j = 0; j < HOT; j++)
				hot[j * page_size] = (char)j;
			kid_reply(reply, 'k');
			break;
		case 'c':
			kid_reply(reply, pages_wrong(region, N, SEED) ? 'x' : 'k');
			break;
		default:
			return 0;
		}
	}
}

static bool kids_merged(void)
{
	char r[K];

	if (!CHECK(kids_start(&kids, K, mglru_kid, NULL) == 0, "fork") ||
	    !CHECK(kids_collect(&kids, r), "children ready"))
		return false;
	for (int i = 0; i < K; i++)
		if (!CHECK(r[i] == 'r', "child %d setup (%c)", i, r[i]))
			return false;
	return CHECK(ksm_wait_counts(N, (K - 1) * N, 0, 0), "merged");
}

static void test_out(void)
{
	long zout = vmstat("zswpout"), cur;
	int swapped = 0, present, round;
	char limit[32], r;

	CHECK(ksm_reset() == 0, "reset");
	kids_up = kids_merged();
	if (!kids_up) {
		ktap_result(false, "mglru_zswap_out");
		return;
	}
	/* Room for the hot buffer and a little more, not for all of it. */
	cur = read_long(CG "/memory.current");
	snprintf(limit, sizeof(limit), "%ld", cur + (HOT / 2) * page_size);
	CHECK(write_file(CG "/memory.max", limit) == 0, "memory.max %s",
	      limit);
	for (round = 1; round <= ROUNDS && swapped < N; round++) {
		CHECK(kid_call(&kids, 0, 'p', &r) && r == 'k',
		      "child 0 under pressure (%c)", r);
		swapped = shared_pages_swapped(kids.pid, K, region, N,
					       &present);
	}
	ktap_diag("%d of %d KSM pages in zswap after %d rounds; zswpout +%ld, Zswapped %ld kB",
		  swapped, N, round - 1, vmstat("zswpout") - zout,
		  meminfo_kb("Zswapped"));
	CHECK(swapped == N, "%d of %d KSM pages swapped out", swapped, N);
	CHECK(vmstat("zswpout") - zout >= N, "zswpout +%ld",
	      vmstat("zswpout") - zout);
	ktap_result(checks_passed(), "mglru_zswap_out");
}

static void test_in(void)
{
	long zin = vmstat("zswpin");

	if (!CHECK(kids_up, "no merged children")) {
		ktap_result(false, "mglru_zswap_in");
		return;
	}
	CHECK(write_file(CG "/memory.max", "max") == 0, "memory.max max");
	CHECK(kids_sync_all(&kids, 'c', 'k'), "every child reads its pages back");
	/* A page still in the swap cache comes back without a zswap load. */
	ktap_diag("zswpin +%ld, ksm_swpin_copy %ld", vmstat("zswpin") - zin,
		  vmstat("ksm_swpin_copy"));
	CHECK(ksm_wait_counts(N, (K - 1) * N, 0, 0), "merged after swap-in");
	for (int i = 0; i < K; i++) {
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/ksm_merging_pages",
			 kids.pid[i]);
		CHECK(read_long(path) == N, "child %d ksm_merging_pages %ld", i,
		      read_long(path));
	}
	CHECK(kids_sync_all(&kids, 'c', 'k'), "content after merging again");
	kids_send(&kids, 'q');
	CHECK(kids_wait(&kids), "children exit");
	ktap_result(checks_passed(), "mglru_zswap_in");
}

static void restore(void)
{
	cgroup_remove(CG);
	if (saved_zswap[0])
		write_file(ZSWAP, saved_zswap);
	if (saved_lru_gen[0])
		write_file(LRU_GEN, saved_lru_gen);
}

int main(void)
{
	static const char *const names[] = {
		"mglru_zswap_out", "mglru_zswap_in",
	};
	const char *why = NULL;

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (read_file(LRU_GEN, saved_lru_gen, sizeof(saved_lru_gen)))
		why = "no CONFIG_LRU_GEN";
	else if (read_file(ZSWAP, saved_zswap, sizeof(saved_zswap)))
		why = "no CONFIG_ZSWAP";
	else
		why = swap_memcg_setup(CG);
	if (why)
		return ktap_skip_all(names, ARRAY_SIZE(names), why);
	if (write_file(LRU_GEN, "y") || write_file(ZSWAP, "Y")) {
		ktap_diag("could not turn lru_gen and zswap on");
		restore();
		return 1;
	}
	region = map_unfaulted(N);
	test_out();
	test_in();
	ksm_reset();
	restore();
	return ktap_finish();
}
