// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_migrate.c - KSM pages are movable.
 *
 * The parent and two children hold the same N pages, merged into N KSM
 * pages (shared N, sharing 2N). The KSM pages are then moved between the
 * two NUMA nodes of the guest: with move_pages(2) (MPOL_MF_MOVE leaves them
 * alone, being mapped by several processes; MPOL_MF_MOVE_ALL moves them),
 * with mbind(2) MPOL_BIND and MPOL_MF_MOVE_ALL, with migrate_pages(2) of a
 * whole process, and by compaction (/proc/sys/vm/compact_memory). After
 * each move: the pages are on the new node in new frames, every sharer
 * maps the same new frame and reads its content, the counters have not
 * moved, and ksmd keeps them: a new page of the same content joins the
 * moved KSM page.
 *
 * With merge_across_nodes=0, a KSM page moved to the other node keeps its
 * sharers and their content; as mainline has it, it does not merge with
 * the KSM page of the same content already there, and a new page of its
 * content on its new node joins it, while one on its old node does not.
 *
 * Skipped on a guest with one node.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ksmtest.h"

#define N	32	/* KSM pages */
#define K	2	/* children; with the parent, K + 1 sharers */
#define SEED	0x6d00

#define MPOL_DEFAULT		0
#define MPOL_BIND		2
#define MPOL_MF_STRICT		(1 << 0)
#define MPOL_MF_MOVE		(1 << 1)
#define MPOL_MF_MOVE_ALL	(1 << 2)
#define MAXNODE			64

/* KSM pages seen to change frame, over all the tests. */
static long migrated_ksm_pages;

/*
 * move_pages(2) of @n pages from @p in this process: to @nodes[i] with
 * @flags, or (nodes NULL) only their nodes into @status. Returns what the
 * syscall returned (the number of pages it failed to move) or -errno.
 */
static long move(char *p, int n, const int *nodes, int *status, int flags)
{
	void *pages[N];
	long ret;

	if (n > N)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		pages[i] = p + i * page_size;
		status[i] = -1000;	/* not written by the kernel */
	}
	ret = syscall(__NR_move_pages, 0, n, pages, nodes, status, flags);
	return ret < 0 ? -errno : ret;
}

static int node_of(char *p)
{
	int st = -1;

	return move(p, 1, NULL, &st, 0) ? -1 : st;
}

/* Move @n pages from @p to @node with MOVE_ALL; true if all got there. */
static bool move_all_to(char *p, int n, int node)
{
	int nodes[N], st[N];
	bool ok = true;
	long ret;

	for (int i = 0; i < n; i++)
		nodes[i] = node;
	ret = move(p, n, nodes, st, MPOL_MF_MOVE_ALL);
	if (!CHECK(ret == 0, "move_pages to node %d: %ld", node, ret))
		return false;
	for (int i = 0; i < n; i++)
		ok &= CHECK(st[i] == node, "page %d status %d, want node %d", i,
			    st[i], node);
	return ok;
}

/*
 * The children's region: mapped but not touched by the parent before the
 * fork, so it is at the same address in each child, for its pagemap.
 */
static char *region;
static unsigned int kid_seed;

/* A child fills and madvises the region, replies 'r'; 'c' checks it. */
static int migrate_kid(void *arg, int i, int cmd, int reply)
{
	for (int j = 0; j < N; j++)
		fill_page(region, j, kid_seed);
	kid_reply(reply, merge_pages(region, N) ? 'e' : 'r');
	while (kid_wait_cmd(cmd) == 'c')
		kid_reply(reply, pages_wrong(region, N, kid_seed) ? 'x' : 'k');
	return 0;
}

static struct kids kids;
static char *mine;	/* the parent's N pages */

/* Do the parent and both children map the same frame for every page? */
static bool one_frame_each(void)
{
	bool ok = true;

	for (int j = 0; j < N; j++) {
		unsigned long pfn = page_pfn(mine + j * page_size);

		for (int i = 0; i < K; i++)
			ok &= CHECK(pfn && pid_pfn(kids.pid[i], region +
						   j * page_size) == pfn,
				    "page %d: child %d frame %lx, parent %lx",
				    j, i, pid_pfn(kids.pid[i],
						  region + j * page_size), pfn);
	}
	return ok;
}

static bool all_content(void)
{
	char r[K];
	bool ok = kids_sync(&kids, 'c', r);

	for (int i = 0; i < K; i++)
		ok &= CHECK(r[i] == 'k', "child %d content (%c)", i, r[i]);
	ok &= CHECK(pages_wrong(mine, N, kid_seed) == 0, "parent content");
	return ok;
}

/* The parent and K children with N merged pages of content @seed. */
static bool setup(unsigned int seed)
{
	char r[K];

	CHECK(ksm_reset() == 0, "reset");
	kid_seed = seed;
	if (!CHECK(kids_start(&kids, K, migrate_kid, NULL) == 0, "fork"))
		return false;
	mine = map_pages(N);
	for (int j = 0; j < N; j++)
		fill_page(mine, j, seed);
	CHECK(merge_pages(mine, N) == 0, "madvise");
	if (!CHECK(kids_collect(&kids, r) && r[0] == 'r' && r[1] == 'r',
		   "children ready"))
		return false;
	return CHECK(ksm_wait_counts(N, K * N, 0, 0), "merged") &&
	       one_frame_each();
}

static void teardown(void)
{
	kids_send(&kids, 'q');
	CHECK(kids_wait(&kids), "children exit");
	if (mine)
		munmap(mine, N * page_size);
	mine = NULL;
}

static void frames(unsigned long *pfn)
{
	for (int j = 0; j < N; j++)
		pfn[j] = page_pfn(mine + j * page_size);
}

/*
 * Migration fails (EAGAIN, retried a few times, then given up) while
 * someone else holds a reference to the page, and ksmd at full speed
 * references KSM pages all the time: pause it while pages are moved.
 */
static bool paused(void)
{
	return CHECK(ksm_pause() == 0, "run=0");
}

/*
 * After a move, with ksmd still paused: page j on node @want[j] (NULL:
 * anywhere) in a frame other than @before[j] (when @must_move), the same
 * frame for every sharer, content, counters as they were; ksmd resumes,
 * and all of it still holds after its scans; a new page of page 0's
 * content joins page 0's KSM page. Returns how many pages changed frame.
 */
static int check_moved(const unsigned long *before, const int *want,
		       bool must_move)
{
	unsigned long after[N];
	struct ksm_counts c;
	int moved = 0, st[N];
	char *extra;

	CHECK(move(mine, N, NULL, st, 0) == 0, "query nodes");
	frames(after);
	for (int j = 0; j < N; j++) {
		if (want)
			CHECK(st[j] == want[j], "page %d on node %d, want %d",
			      j, st[j], want[j]);
		moved += after[j] && after[j] != before[j];
		if (must_move)
			CHECK(after[j] && after[j] != before[j],
			      "page %d: frame %lx, was %lx", j, after[j],
			      before[j]);
	}
	one_frame_each();
	all_content();
	ksm_get_counts(&c);
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(c.shared == N && c.sharing == K * N && c.unshared == 0,
	      "counters moved: shared %ld sharing %ld unshared %ld",
	      c.shared, c.sharing, c.unshared);
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_wait_counts(N, K * N, 0, 0), "still merged");
	for (int j = 0; j < N; j++)
		CHECK(page_pfn(mine + j * page_size) == after[j],
		      "page %d: frame %lx after scans, %lx after the move", j,
		      page_pfn(mine + j * page_size), after[j]);
	one_frame_each();

	extra = map_pages(1);
	fill_pattern(extra, kid_seed, 0);
	CHECK(merge_pages(extra, 1) == 0, "madvise");
	CHECK(ksm_wait_counts(N, K * N + 1, 0, 0), "a new page joins");
	CHECK(page_pfn(extra) == page_pfn(mine),
	      "new page in frame %lx, moved KSM page in %lx",
	      page_pfn(extra), page_pfn(mine));
	CHECK(holds_pattern(extra, kid_seed, 0), "new page content");
	munmap(extra, page_size);
	all_content();
	return moved;
}

/*
 * move_pages(2): MPOL_MF_MOVE refuses pages mapped by other processes
 * (-EACCES); MPOL_MF_MOVE_ALL moves each KSM page to the other node.
 */
static void test_move_pages(void)
{
	unsigned long before[N];
	int nodes[N], st[N], cur[N];
	long ret;

	if (!setup(SEED) || !paused())
		goto out;
	frames(before);
	CHECK(move(mine, N, NULL, cur, 0) == 0, "query nodes");
	for (int j = 0; j < N; j++)
		nodes[j] = !cur[j];
	ret = move(mine, N, nodes, st, MPOL_MF_MOVE);
	CHECK(ret == 0, "MPOL_MF_MOVE: %ld", ret);
	for (int j = 0; j < N; j++)
		CHECK(st[j] == -EACCES, "page %d: MPOL_MF_MOVE status %d", j,
		      st[j]);
	for (int j = 0; j < N; j++)
		CHECK(page_pfn(mine + j * page_size) == before[j],
		      "page %d moved without MOVE_ALL", j);
	ret = move(mine, N, nodes, st, MPOL_MF_MOVE_ALL);
	CHECK(ret == 0, "MPOL_MF_MOVE_ALL: %ld", ret);
	for (int j = 0; j < N; j++)
		CHECK(st[j] == nodes[j], "page %d: status %d, want %d", j,
		      st[j], nodes[j]);
	migrated_ksm_pages += check_moved(before, nodes, true);
out:
	teardown();
	ktap_result(checks_passed(), "move_pages_move_all");
}

/*
 * setup(@seed), ksmd paused, the KSM pages all moved to node 0: their
 * frames in @before, node 1 for each in @want.
 */
static bool setup_on_node0(unsigned int seed, unsigned long *before,
			   int *want)
{
	if (!setup(seed) || !paused() || !move_all_to(mine, N, 0))
		return false;
	frames(before);
	for (int j = 0; j < N; j++)
		want[j] = 1;
	return true;
}

/* mbind(2) MPOL_BIND to node 1 with MPOL_MF_MOVE_ALL, from node 0. */
static void test_mbind(void)
{
	unsigned long before[N], mask = 1UL << 1;
	int want[N];
	long ret;

	if (!setup_on_node0(SEED + 1, before, want))
		goto out;
	ret = syscall(__NR_mbind, mine, N * page_size, MPOL_BIND, &mask,
		      MAXNODE, MPOL_MF_MOVE_ALL | MPOL_MF_STRICT);
	CHECK(ret == 0, "mbind: %s", strerror(errno));
	migrated_ksm_pages += check_moved(before, want, true);
	ret = syscall(__NR_mbind, mine, N * page_size, MPOL_DEFAULT, NULL, 0,
		      0);
	CHECK(ret == 0, "mbind MPOL_DEFAULT: %s", strerror(errno));
out:
	teardown();
	ktap_result(checks_passed(), "mbind_move_all");
}

/*
 * migrate_pages(2) of a child from node 0 to node 1 moves the KSM pages
 * it maps (root has MOVE_ALL); then the parent's own, back to node 0.
 */
static void test_migrate_pages(void)
{
	unsigned long before[N], from = 1UL << 0, to = 1UL << 1;
	int want[N];
	long ret;

	if (!setup_on_node0(SEED + 2, before, want))
		goto out;
	ret = syscall(__NR_migrate_pages, kids.pid[0], MAXNODE, &from, &to);
	CHECK(ret >= 0, "migrate_pages of child 0: %s", strerror(errno));
	ktap_diag("migrate_pages of child 0: %ld pages not moved", ret);
	migrated_ksm_pages += check_moved(before, want, true);

	frames(before);
	for (int j = 0; j < N; j++)
		want[j] = 0;
	paused();
	ret = syscall(__NR_migrate_pages, 0, MAXNODE, &to, &from);
	CHECK(ret >= 0, "migrate_pages of the parent: %s", strerror(errno));
	ktap_diag("migrate_pages of the parent: %ld pages not moved", ret);
	migrated_ksm_pages += check_moved(before, want, true);
out:
	teardown();
	ktap_result(checks_passed(), "migrate_pages_process");
}

/* Compaction may move KSM pages, or not; sharers and content stay. */
static void test_compaction(void)
{
	unsigned long before[N];
	int err, moved;

	if (!setup(SEED + 3) || !paused())
		goto out;
	frames(before);
	err = write_file("/proc/sys/vm/compact_memory", "1");
	CHECK(err == 0, "compact_memory: %s", strerror(-err));
	moved = check_moved(before, NULL, false);
	ktap_diag("compaction moved %d of %d KSM pages", moved, N);
	migrated_ksm_pages += moved;
out:
	teardown();
	ktap_result(checks_passed(), "compaction");
}

/* @n copies of pattern (@seed, i) for page i, placed on @node, madvised. */
static char *pages_on(int node, int n, unsigned int seed)
{
	char *p = map_pages(n);

	for (int i = 0; i < n; i++)
		fill_page(p, i, seed);
	move_all_to(p, n, node);
	CHECK(merge_pages(p, n) == 0, "madvise");
	return p;
}

/* One page of pattern (@seed, @index), placed on @node, madvised. */
static char *one_page_on(int node, unsigned int seed, size_t index)
{
	char *p = map_pages(1);

	fill_pattern(p, seed, index);
	move_all_to(p, 1, node);
	CHECK(merge_pages(p, 1) == 0, "madvise");
	return p;
}

static void same_frames(const char *a, const char *b, int n, bool same,
			const char *what)
{
	for (int j = 0; j < n; j++) {
		unsigned long fa = page_pfn(a + j * page_size);
		unsigned long fb = page_pfn(b + j * page_size);

		CHECK(fa && fb && (fa == fb) == same,
		      "%s: page %d frames %lx and %lx", what, j, fa, fb);
	}
}

static void nodes_are(const char *p, int n, int node, const char *what)
{
	for (int j = 0; j < n; j++)
		CHECK(node_of((char *)p + j * page_size) == node,
		      "%s: page %d on node %d, want %d", what, j,
		      node_of((char *)p + j * page_size), node);
}

/*
 * merge_across_nodes=0: regions a, b on node 0 and c, d on node 1 hold the
 * same M2 pages; l1, l2 on node 0 hold ML pages of another content. That
 * is one KSM page of each content on each node. Then the first M pages of
 * a and all of l1 move to node 1 (MOVE_ALL): their sharers follow, the
 * content stays. The moved pages stay KSM pages apart from c's: pages_shared
 * does not change. A new page on node 1 of l's content joins l's moved
 * KSM page; one on node 0 stays unshared.
 */
#define M2	8
#define M	4
#define ML	4
static void test_within_nodes(void)
{
	const unsigned int s = SEED + 4, t = SEED + 5;
	unsigned long before[M2], lbefore[ML];
	char *a, *b, *c, *d, *l1, *l2, *e0, *e1, *e2;
	const long shared = 2 * M2 + ML;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_write("merge_across_nodes", 0) == 0, "merge_across_nodes=0");
	a = pages_on(0, M2, s);
	b = pages_on(0, M2, s);
	c = pages_on(1, M2, s);
	d = pages_on(1, M2, s);
	l1 = pages_on(0, ML, t);
	l2 = pages_on(0, ML, t);
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_counts(shared, shared, 0, 0), "a KSM page per node");
	same_frames(a, b, M2, true, "a, b");
	same_frames(c, d, M2, true, "c, d");
	same_frames(a, c, M2, false, "a, c");
	same_frames(l1, l2, ML, true, "l1, l2");
	nodes_are(a, M2, 0, "a");
	nodes_are(c, M2, 1, "c");

	for (int j = 0; j < M2; j++)
		before[j] = page_pfn(a + j * page_size);
	for (int j = 0; j < ML; j++)
		lbefore[j] = page_pfn(l1 + j * page_size);
	paused();
	move_all_to(a, M, 1);
	move_all_to(l1, ML, 1);
	CHECK(ksm_resume() == 0, "run=1");
	for (int j = 0; j < M; j++)
		if (CHECK(page_pfn(a + j * page_size) != before[j],
			  "a: page %d not moved", j))
			migrated_ksm_pages++;
	for (int j = 0; j < ML; j++)
		if (CHECK(page_pfn(l1 + j * page_size) != lbefore[j],
			  "l1: page %d not moved", j))
			migrated_ksm_pages++;
	nodes_are(b, M, 1, "b (moved)");
	nodes_are(b + M * page_size, M2 - M, 0, "b (not moved)");
	nodes_are(l2, ML, 1, "l2");
	same_frames(a, b, M2, true, "a, b after the move");
	same_frames(l1, l2, ML, true, "l1, l2 after the move");

	CHECK(ksm_wait_scans(3), "scans");
	CHECK(ksm_wait_counts(shared, shared, 0, 0), "after the move");
	ktap_diag("stable_node_chains %ld stable_node_dups %ld",
		  ksm_read("stable_node_chains"), ksm_read("stable_node_dups"));
	same_frames(a, b, M2, true, "a, b after scans");
	same_frames(c, d, M2, true, "c, d after scans");
	same_frames(a, c, M2, false, "a, c after scans");
	same_frames(l1, l2, ML, true, "l1, l2 after scans");
	nodes_are(a, M, 1, "a (moved) after scans");
	CHECK(pages_wrong(a, M2, s) == 0 && pages_wrong(b, M2, s) == 0 &&
	      pages_wrong(c, M2, s) == 0 && pages_wrong(d, M2, s) == 0,
	      "content");
	CHECK(pages_wrong(l1, ML, t) == 0 && pages_wrong(l2, ML, t) == 0,
	      "content of l");

	e1 = one_page_on(1, t, 0);
	e0 = one_page_on(0, t, 1);
	e2 = one_page_on(1, s, 0);
	CHECK(ksm_wait_counts(shared, shared + 2, 1, 0), "new pages");
	CHECK(page_pfn(e1) == page_pfn(l1),
	      "node 1 newcomer in frame %lx, l's moved KSM page in %lx",
	      page_pfn(e1), page_pfn(l1));
	CHECK(smaps_kb(0, e0, "KSM") == 0, "node 0 newcomer merged (%ld kB)",
	      smaps_kb(0, e0, "KSM"));
	CHECK(page_pfn(e2) == page_pfn(a) || page_pfn(e2) == page_pfn(c),
	      "newcomer of a's content in frame %lx: a %lx c %lx",
	      page_pfn(e2), page_pfn(a), page_pfn(c));
	ktap_diag("newcomer of a's content joined %s",
		  page_pfn(e2) == page_pfn(a) ? "the moved KSM page" :
		  page_pfn(e2) == page_pfn(c) ? "the one of node 1" : "none");
	CHECK(holds_pattern(e1, t, 0) && holds_pattern(e0, t, 1) &&
	      holds_pattern(e2, s, 0), "newcomers' content");
	CHECK(pages_wrong(l1, ML, t) == 0 && pages_wrong(l2, ML, t) == 0 &&
	      pages_wrong(a, M2, s) == 0 && pages_wrong(c, M2, s) == 0,
	      "content at the end");

	munmap(a, M2 * page_size);
	munmap(b, M2 * page_size);
	munmap(c, M2 * page_size);
	munmap(d, M2 * page_size);
	munmap(l1, ML * page_size);
	munmap(l2, ML * page_size);
	munmap(e0, page_size);
	munmap(e1, page_size);
	munmap(e2, page_size);
	ktap_result(checks_passed(), "move_within_nodes_only");
}

int main(void)
{
	static const char *const names[] = {
		"move_pages_move_all", "mbind_move_all",
		"migrate_pages_process", "compaction",
		"move_within_nodes_only",
	};

	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (access("/sys/devices/system/node/node1", F_OK))
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "needs two NUMA nodes");
	region = map_unfaulted(N);

	test_move_pages();
	test_mbind();
	test_migrate_pages();
	test_compaction();
	test_within_nodes();
	ktap_diag("migrated_ksm_pages %ld", migrated_ksm_pages);
	ksm_reset();
	return ktap_finish();
}
