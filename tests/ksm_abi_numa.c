// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_abi_numa.c - merge_across_nodes on a guest with two NUMA nodes, as
 * mm/ksm.c of mainline 6.12 has it: with 1, identical pages merge into one
 * KSM page whatever their nodes; with 0 (settable only while no KSM page
 * exists), only pages on the same node merge, into a KSM page on that node.
 * Pages are placed with move_pages(2) and their node read back with it.
 * Skipped on a guest with one node.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ksmtest.h"

#define MPOL_MF_MOVE (1 << 1)

/* Move @n pages starting at @p to @node (node < 0: only query); 0 if all there. */
static int place(char *p, int n, int node, int *where)
{
	void *pages[16];
	int nodes[16], status[16];
	long ret;

	if (n > 16)
		return -1;
	for (int i = 0; i < n; i++) {
		pages[i] = p + i * page_size;
		nodes[i] = node;
	}
	ret = syscall(__NR_move_pages, 0, n, pages, node < 0 ? NULL : nodes,
		      status, node < 0 ? 0 : MPOL_MF_MOVE);
	if (ret < 0)
		return -errno;
	for (int i = 0; i < n; i++) {
		if (where)
			where[i] = status[i];
		if (node >= 0 && status[i] != node)
			return status[i] < 0 ? status[i] : -EAGAIN;
	}
	return ret ? -EAGAIN : 0;
}

/* The node of the page at @p, or -errno. */
static int node_of(char *p)
{
	int where = -1, err = place(p, 1, -1, &where);

	return err ? err : where;
}

static bool two_nodes(void)
{
	return !access("/sys/devices/system/node/node1", F_OK);
}

/* @n copies of page content (@seed, 0) on @node, madvised. */
static char *copies_on(int node, int n, unsigned int seed)
{
	char *p = map_pages(n);
	int err;

	for (int i = 0; i < n; i++)
		fill_pattern(p + i * page_size, seed, 0);
	err = place(p, n, node, NULL);
	CHECK(err == 0, "move_pages to node %d: %s", node, strerror(-err));
	for (int i = 0; i < n; i++)
		CHECK(node_of(p + i * page_size) == node, "page %d on node %d",
		      i, node_of(p + i * page_size));
	CHECK(merge_pages(p, n) == 0, "madvise");
	return p;
}

static int copies_wrong(const char *p, int n, unsigned int seed)
{
	int bad = 0;

	for (int i = 0; i < n; i++)
		bad += !holds_pattern(p + i * page_size, seed, 0);
	return bad;
}

static bool same_frame(const char *p, int n, unsigned long pfn)
{
	for (int i = 0; i < n; i++)
		if (page_pfn(p + i * page_size) != pfn)
			return false;
	return pfn != 0;
}

/* merge_across_nodes=1: one page on each node, one KSM page for both. */
static void test_across(void)
{
	char *a, *b;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_read("merge_across_nodes") == 1, "merge_across_nodes %ld",
	      ksm_read("merge_across_nodes"));
	a = copies_on(0, 1, 0x4e01);
	b = copies_on(1, 1, 0x4e01);
	CHECK(ksm_wait_counts(1, 1, 0, 0), "one KSM page");
	CHECK(page_pfn(a) && page_pfn(a) == page_pfn(b), "one page frame");
	CHECK(node_of(a) == node_of(b), "nodes %d and %d", node_of(a),
	      node_of(b));
	CHECK(copies_wrong(a, 1, 0x4e01) == 0 && copies_wrong(b, 1, 0x4e01) == 0,
	      "content");
	munmap(a, page_size);
	munmap(b, page_size);
	ktap_result(checks_passed(), "merge_across_nodes");
}

/* merge_across_nodes can change only with no KSM page: EBUSY otherwise. */
static void test_busy(void)
{
	char *a;

	CHECK(ksm_reset() == 0, "reset");
	a = copies_on(0, 2, 0x4e02);
	CHECK(ksm_wait_counts(1, 1, 0, 0), "merged");
	CHECK(ksm_write("merge_across_nodes", 0) == -EBUSY,
	      "merge_across_nodes=0 with a KSM page");
	CHECK(ksm_read("merge_across_nodes") == 1, "merge_across_nodes %ld",
	      ksm_read("merge_across_nodes"));
	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_write("merge_across_nodes", 0) == 0, "merge_across_nodes=0");
	CHECK(ksm_read("merge_across_nodes") == 0, "merge_across_nodes %ld",
	      ksm_read("merge_across_nodes"));
	CHECK(copies_wrong(a, 2, 0x4e02) == 0, "content");
	munmap(a, 2 * page_size);
	ktap_result(checks_passed(), "merge_across_nodes_busy");
}

/*
 * merge_across_nodes=0: two copies on each node of one content make two
 * KSM pages, one on each node; a lone copy on node 1 of another content
 * stays apart from its twin on node 0.
 */
static void test_within(void)
{
	char *a, *b, *c, *d;

	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_write("merge_across_nodes", 0) == 0, "merge_across_nodes=0");
	a = copies_on(0, 2, 0x4e03);
	b = copies_on(1, 2, 0x4e03);
	c = copies_on(0, 1, 0x4e04);
	d = copies_on(1, 1, 0x4e04);
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_counts(2, 2, 2, 0), "a KSM page on each node");
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_wait_counts(2, 2, 2, 0), "still");
	CHECK(same_frame(a, 2, page_pfn(a)), "node 0 copies share a frame");
	CHECK(same_frame(b, 2, page_pfn(b)), "node 1 copies share a frame");
	CHECK(page_pfn(a) != page_pfn(b), "one frame for both nodes");
	CHECK(node_of(a) == 0 && node_of(a + page_size) == 0,
	      "node 0 KSM page on node %d", node_of(a));
	CHECK(node_of(b) == 1 && node_of(b + page_size) == 1,
	      "node 1 KSM page on node %d", node_of(b));
	CHECK(page_pfn(c) != page_pfn(d), "lone twins merged across nodes");
	CHECK(smaps_kb(0, c, "KSM") == 0 && smaps_kb(0, d, "KSM") == 0,
	      "lone twins: KSM %ld and %ld kB", smaps_kb(0, c, "KSM"),
	      smaps_kb(0, d, "KSM"));
	CHECK(copies_wrong(a, 2, 0x4e03) == 0 && copies_wrong(b, 2, 0x4e03) == 0,
	      "content");
	CHECK(copies_wrong(c, 1, 0x4e04) == 0 && copies_wrong(d, 1, 0x4e04) == 0,
	      "content of the lone twins");
	CHECK(self_merging_pages() == 4, "ksm_merging_pages %ld",
	      self_merging_pages());
	munmap(a, 2 * page_size);
	munmap(b, 2 * page_size);
	munmap(c, page_size);
	munmap(d, page_size);
	ktap_result(checks_passed(), "merge_within_node_only");
}

/* Back to 1: the same layout merges into one KSM page again. */
static void test_back_across(void)
{
	char *a, *b;

	CHECK(ksm_reset() == 0, "reset (merge_across_nodes=1)");
	CHECK(ksm_read("merge_across_nodes") == 1, "merge_across_nodes %ld",
	      ksm_read("merge_across_nodes"));
	a = copies_on(0, 2, 0x4e05);
	b = copies_on(1, 2, 0x4e05);
	CHECK(ksm_wait_counts(1, 3, 0, 0), "one KSM page");
	CHECK(same_frame(a, 2, page_pfn(b)) && same_frame(b, 2, page_pfn(b)),
	      "one frame");
	CHECK(copies_wrong(a, 2, 0x4e05) == 0 && copies_wrong(b, 2, 0x4e05) == 0,
	      "content");
	munmap(a, 2 * page_size);
	munmap(b, 2 * page_size);
	ktap_result(checks_passed(), "merge_across_nodes_restored");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(4);
	if (!two_nodes()) {
		static const char *const names[] = {
			"merge_across_nodes", "merge_across_nodes_busy",
			"merge_within_node_only", "merge_across_nodes_restored",
		};

		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "needs two NUMA nodes");
	}
	test_across();
	test_busy();
	test_within();
	test_back_across();
	ksm_reset();
	return ktap_finish();
}
