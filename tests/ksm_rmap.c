// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_rmap.c - the reverse map of KSM pages: finding every mapping of a
 * KSM page when many VMAs share one anon_vma, and after mremap() moved
 * the pages.
 *
 *   many_vmas_migrate_2048	one mapping of V one-page VMAs (split by
 *   many_vmas_migrate_16384	mprotect(), so all in one anon_vma), page
 *	2i and 2i+1 equal, merged into V/2 KSM pages of two sharers each;
 *	SAMPLE of the KSM pages are moved to the other NUMA node with
 *	move_pages(MPOL_MF_MOVE_ALL): each must land there, both twins on
 *	one frame, and every page must keep its content (ksmd paused while
 *	the pages move: test_beside_ksmd() moves pages beside it);
 *   many_vmas_migrate_scales	(samepage) moving a KSM page costs at 16,384
 *	VMAs at most SCALE_MAX times what it costs at 2,048: an rmap walk
 *	looks up the VMAs that can hold the page instead of visiting every
 *	VMA of the anon_vma (8 times the VMAs, 8 times the cost, on stock);
 *	each figure is the least of ROUNDS moves;
 *   mremap_then_merge		pages merged, then moved by mremap() (which
 *	unmerges the KSM pages it moves), merge again at their new address
 *	(where a page's linear index is no longer its virtual page number);
 *	then migration, swap-out and MADV_UNMERGEABLE of those KSM pages
 *	all work and every page keeps its content;
 *   mremap_while_swapped		KSM pages swapped out, their mapping moved
 *	by mremap() while in swap, read back at the new address, merged
 *	again and swapped out again: content kept throughout;
 *   migrate_beside_ksmd	(samepage) with ksmd scanning beside it as fast
 *	as it can, every move_pages() of BESIDE_ROUNDS moves of merged
 *	pairs moves all its pages at the first call (mainline's ksmd, which
 *	waits for the lock of a KSM page under migration holding a
 *	reference to it, fails some: the other tests call again, as a user
 *	would, up to MOVE_TRIES times).
 *
 * Mainline behaviour: all but the two samepage ones also pass on stock
 * (KSM_FORCE=1 in the environment runs those there too, to see them fail).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ksmtest.h"

#define SAMPLE		32	/* KSM pages moved in each many-VMA round */
#define ROUNDS		5
#define SCALE_MAX	3.0
#define N		64	/* pages of the mremap tests: 32 equal pairs */
#define SEED		0x4d00
#define MERGE_SCANS	8
#define MOVE_TRIES	5
#define BESIDE_ROUNDS	16
#define MPOL_DEFAULT		0
#define MPOL_BIND		2
#define MPOL_MF_MOVE_ALL	(1 << 2)
#define CG		CGROUP_ROOT "/ksm_rmap_test"

static bool two_nodes, samepage;

/*
 * move_pages(2) of this process's @n pages @pages: to @node, or (@node
 * -1) only their nodes into @status. Returns what the syscall returned
 * or -errno. Two addresses of one KSM page are never named in one call:
 * the second would find its page isolated already, and get EBUSY.
 */
static long move_to(void **pages, int n, int node, int *status)
{
	int nodes[N];
	long ret;

	for (int i = 0; i < n; i++) {
		nodes[i] = node;
		status[i] = -1000;
	}
	ret = syscall(__NR_move_pages, 0, n, pages, node < 0 ? NULL : nodes,
		      status, MPOL_MF_MOVE_ALL);
	return ret < 0 ? -errno : ret;
}

/* Calls of pairs_to(), and those whose first move_pages() left a page. */
static int moves, moves_retried;

/*
 * Move the KSM pages of @n pairs, pair k at @p + 2k @stride pages, to
 * @node, naming the first twin of each; true if both twins of every pair
 * are there after. A page that ksmd holds meanwhile may stay behind: a
 * second call, as a user makes, moves it (up to MOVE_TRIES calls). Seconds
 * per KSM page in @secs, retries included.
 */
static bool pairs_to(char *p, int n, size_t stride, int node, double *secs)
{
	void *pages[N];
	int st[N], wrong = 0;
	long ret;

	for (int k = 0; k < n; k++)
		pages[k] = p + 2 * k * stride * page_size;
	*secs = monotonic_seconds();
	ret = move_to(pages, n, node, st);
	moves++;
	for (int tries = 1; ret > 0 && tries < MOVE_TRIES; tries++) {
		moves_retried += tries == 1;
		ret = move_to(pages, n, node, st);
	}
	*secs = (monotonic_seconds() - *secs) / n;
	for (int pass = 0; pass < 2 && ret == 0; pass++) {
		for (int k = 0; k < n; k++)
			if (st[k] != node && !wrong++)
				ktap_diag("pair %d: twin %d status %d", k, pass,
					  st[k]);
		for (int k = 0; k < n; k++)
			pages[k] = (char *)pages[k] + page_size;
		if (!pass)
			ret = move_to(pages, n, -1, st);
	}
	return CHECK(ret == 0 && !wrong, "move_pages to %d: %ld, %d elsewhere",
		     node, ret, wrong);
}

/*
 * @pages pages faulted in on node 0, so that the first move to node 1
 * moves every page it names.
 */
static char *map_on_node0(size_t pages)
{
	unsigned long mask = 1;
	char *p;

	if (syscall(__NR_set_mempolicy, MPOL_BIND, &mask, 2))
		ktap_diag("set_mempolicy: %s", strerror(errno));
	p = map_pages(pages);
	syscall(__NR_set_mempolicy, MPOL_DEFAULT, NULL, 0);
	return p;
}

static bool merging_is(void *want)
{
	return self_merging_pages() == *(long *)want;
}

/* Wait until this process has @n pages merged (ksmd's count). */
static bool wait_merged(long n)
{
	return CHECK(ksm_wait_until(merging_is, &n, MERGE_SCANS),
		     "merged %ld of %ld", self_merging_pages(), n);
}

/* Page @i of a region of pairs holds pattern (SEED, i / 2). */
static size_t pairs_wrong(const char *p, size_t pages)
{
	size_t wrong = 0;

	for (size_t i = 0; i < pages; i++)
		wrong += !holds_pattern(p + i * page_size, SEED, i / 2);
	return wrong;
}

static void fill_pairs(char *p, size_t pages)
{
	for (size_t i = 0; i < pages; i++)
		fill_pattern(p + i * page_size, SEED, i / 2);
}

/* Twins 2k and 2k+1 of @p on one frame, for the @n pairs k @stride apart. */
static bool twins_shared(const char *p, int n, size_t stride)
{
	for (int k = 0; k < n; k++) {
		const char *a = p + 2 * k * stride * page_size;

		if (page_pfn(a) != page_pfn(a + page_size))
			return false;
	}
	return true;
}

static const char *pairs_at;

/*
 * The N pages at pairs_at merged: every pair on one frame, and ksmd's
 * count agrees (it lags behind a break of the KSM pages, as by mremap()).
 */
static bool pairs_merged(void *unused)
{
	(void)unused;
	return twins_shared(pairs_at, N / 2, 1) && self_merging_pages() == N;
}

static bool wait_pairs(const char *p)
{
	pairs_at = p;
	return CHECK(ksm_wait_until(pairs_merged, NULL, MERGE_SCANS),
		     "pairs at %p not merged (%ld merged)", p,
		     self_merging_pages());
}

/* Seconds per KSM page moved, least of the rounds; 0 on failure. */
static double many_vmas(int vmas, int rounds)
{
	size_t len = (size_t)vmas * page_size, stride = vmas / 2 / SAMPLE;
	char *p = map_on_node0(vmas);
	double best = 0, t;
	int node = 1;

	fill_pairs(p, vmas);
	CHECK(merge_pages(p, vmas) == 0, "madvise");
	for (int i = 1; i < vmas; i += 2)
		if (!CHECK(mprotect(p + (size_t)i * page_size, page_size,
				    PROT_READ) == 0, "mprotect %d", i))
			goto out;
	if (!wait_merged(vmas))
		goto out;
	/* What is timed is the moves alone: ksmd waits (test_beside_ksmd). */
	ksm_pause();
	for (int r = 0; r < rounds; r++, node = !node) {
		if (!pairs_to(p, SAMPLE, stride, node, &t))
			goto out;
		if (!best || t < best)
			best = t;
	}
	CHECK(twins_shared(p, SAMPLE, stride), "twins apart after the moves");
	CHECK(pairs_wrong(p, vmas) == 0, "content");
	ktap_diag("%d VMAs: %.3f ms per KSM page moved (least of %d)", vmas,
		  best * 1e3, rounds);
out:
	ksm_resume();
	munmap(p, len);
	return checks_passed_so_far() ? best : 0;
}

static double per_page[2];

static void test_many_vmas(int which, int vmas)
{
	char name[64];

	snprintf(name, sizeof(name), "many_vmas_migrate_%d", vmas);
	if (!two_nodes) {
		ktap_skip_named(name, "needs two NUMA nodes");
		return;
	}
	CHECK(ksm_reset() == 0, "reset");
	per_page[which] = many_vmas(vmas, samepage ? ROUNDS : 1);
	ktap_result(checks_passed(), "%s", name);
}

static void test_scales(void)
{
	const char *name = "many_vmas_migrate_scales";

	if (!samepage || !per_page[0] || !per_page[1]) {
		ktap_skip_named(name, samepage ? "many_vmas_migrate failed" :
				"samepage only");
		return;
	}
	CHECK(per_page[1] <= SCALE_MAX * per_page[0],
	      "%.3f ms at 16384 VMAs, %.3f ms at 2048", per_page[1] * 1e3,
	      per_page[0] * 1e3);
	ktap_result(checks_passed(), "%s", name);
}

static int swapped(const char *p, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		uint64_t e = pagemap_entry(0, p + (size_t)i * page_size);

		k += (e & PM_SWAP) && !(e & PM_PRESENT);
	}
	return k;
}

/* Reclaim from our cgroup until the @n pages at @p are all in swap. */
static bool swap_out(const char *p, int n)
{
	int round, k = 0;

	for (round = 1; round <= 40; round++) {
		int err;

		key_value(CG "/memory.stat", "anon");
		err = write_file(CG "/memory.reclaim", "64M swappiness=200");
		if (err == -EINVAL)
			err = write_file(CG "/memory.reclaim", "64M");
		k = swapped(p, n);
		if (k == n)
			break;
		usleep(50000);	/* pacing only: the check above decides */
	}
	return CHECK(k == n, "%d of %d pages in swap", k, n);
}

/* This process into our memory cgroup, so that swap_out() reaches it. */
static bool cg_join(void)
{
	int err = memcg_create(CG);

	if (err)
		return false;
	return write_file(CG "/cgroup.procs", "0") == 0;
}

static void cg_leave(void)
{
	write_file(CGROUP_ROOT "/cgroup.procs", "0");
	rmdir(CG);
}

/* A region of N pages of pairs, registered and merged. */
static char *merged_pairs(void)
{
	char *p = map_on_node0(N);

	fill_pairs(p, N);
	CHECK(merge_pages(p, N) == 0, "madvise");
	wait_pairs(p);
	return p;
}

/* Move the N pages at @p by mremap() to a place of their own. */
static char *move_region(char *p)
{
	size_t len = N * page_size;
	char *to = mmap(NULL, 3 * len, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (!CHECK(to != MAP_FAILED, "mmap"))
		return NULL;
	/* Leave a hole before it, so that the moved VMA merges with none. */
	to = mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to + len);
	if (!CHECK(to != MAP_FAILED, "mremap: %s", strerror(errno)))
		return NULL;
	return to;
}

static void test_mremap_then_merge(bool swap)
{
	const char *name = "mremap_then_merge";
	char *p, *q;

	CHECK(ksm_reset() == 0, "reset");
	if (swap && !CHECK(cg_join(), "memory cgroup"))
		goto out;
	p = merged_pairs();
	/* Paused, ksmd cannot merge the moved pages again before they are seen. */
	ksm_pause();
	q = move_region(p);
	if (!q)
		goto out;
	CHECK(pairs_wrong(q, N) == 0, "content after the move");
	for (int k = 0; k < N / 2; k++)
		if (!CHECK(!twins_shared(q + 2 * k * page_size, 1, 1),
			   "pair %d still merged after the move", k))
			break;
	ksm_resume();
	if (!wait_pairs(q))
		goto out;
	if (two_nodes) {
		double t;

		pairs_to(q, N / 2, 1, 1, &t);
		CHECK(pairs_wrong(q, N) == 0, "content after migration");
		CHECK(twins_shared(q, N / 2, 1), "twins apart after migration");
	}
	if (swap) {
		swap_out(q, N);
		CHECK(pairs_wrong(q, N) == 0, "content after swap-in");
		wait_pairs(q);
	}
	CHECK(madvise(q, N * page_size, MADV_UNMERGEABLE) == 0, "unmerge");
	wait_merged(0);
	CHECK(pairs_wrong(q, N) == 0, "content after MADV_UNMERGEABLE");
	fill_pattern(q, SEED, 7);
	CHECK(holds_pattern(q, SEED, 7) &&
	      holds_pattern(q + page_size, SEED, 0), "twin written apart");
	munmap(q - N * page_size, 3 * N * page_size);
out:
	if (swap)
		cg_leave();
	ktap_result(checks_passed(), "%s", name);
}

static void test_mremap_while_swapped(void)
{
	char *p, *q;

	CHECK(ksm_reset() == 0, "reset");
	if (!CHECK(cg_join(), "memory cgroup"))
		goto out;
	p = merged_pairs();
	if (!swap_out(p, N))
		goto out;
	q = move_region(p);
	if (!q)
		goto out;
	CHECK(swapped(q, N) == N, "%d of %d still in swap after the move",
	      swapped(q, N), N);
	CHECK(pairs_wrong(q, N) == 0, "content after the move");
	CHECK(merge_pages(q, N) == 0, "madvise");
	if (wait_pairs(q)) {
		swap_out(q, N);
		CHECK(pairs_wrong(q, N) == 0, "content after the second swap");
	}
	munmap(q - N * page_size, 3 * N * page_size);
out:
	cg_leave();
	ktap_result(checks_passed(), "mremap_while_swapped");
}

/*
 * With ksmd scanning beside it as fast as it can, move the N / 2 KSM pages
 * of a region of pairs back and forth BESIDE_ROUNDS times: every move
 * moves all its pages at the first call. ksmd holds no reference on a KSM
 * page it passes, and does not wait for the lock of one under migration
 * (mainline's ksmd, which forgets a mapping it finds under migration,
 * does, and now and then fails a move).
 */
static void test_beside_ksmd(void)
{
	const char *name = "migrate_beside_ksmd";
	int node = 1, retried;
	char *p;
	double t;

	if (!samepage || !two_nodes) {
		ktap_skip_named(name, samepage ? "needs two NUMA nodes" :
				"samepage only");
		return;
	}
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("sleep_millisecs", 0) == 0, "sleep_millisecs");
	p = merged_pairs();
	moves = moves_retried = 0;
	for (int r = 0; r < BESIDE_ROUNDS; r++, node = !node)
		if (!pairs_to(p, N / 2, 1, node, &t))
			break;
	retried = moves_retried;
	CHECK(twins_shared(p, N / 2, 1), "twins apart after the moves");
	CHECK(pairs_wrong(p, N) == 0, "content");
	CHECK(retried == 0, "%d of %d moves needed a second call", retried,
	      moves);
	munmap(p, N * page_size);
	ksm_reset();
	ktap_result(checks_passed(), "%s", name);
}

int main(void)
{
	bool swap;

	ksm_save_settings();
	two_nodes = !access("/sys/devices/system/node/node1", F_OK);
	samepage = ksm_read("max_kernel_pages") >= 0 || getenv("KSM_FORCE");
	swap = have_swap() && !memcg_create(CG);
	ktap_plan(6);
	test_many_vmas(0, 2048);
	test_many_vmas(1, 16384);
	test_scales();
	test_mremap_then_merge(swap);
	if (swap)
		test_mremap_while_swapped();
	else
		ktap_skip_named("mremap_while_swapped",
				"needs swap and the memory controller");
	test_beside_ksmd();
	ksm_reset();
	return ktap_finish();
}
