// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_abi_prctl.c - prctl(PR_SET_MEMORY_MERGE / PR_GET_MEMORY_MERGE), as
 * kernel/sys.c and mm/ksm.c of mainline 6.12 define them: the flag reads
 * back; with it, every anonymous mapping of the process, those it had and
 * those it makes afterwards, is merged without madvise(); a child of fork()
 * inherits it; clearing it unmerges the process's pages, content intact.
 *
 * The whole process is mergeable while the flag is set, so its other pages
 * (stack, heap) may merge too: the checks look at the test's own mappings
 * (smaps "KSM:", PFNs), not at the global counters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#define PR_GET_MEMORY_MERGE 68
#endif

#define PAGES 32

/* One unique page, madvised, keeps ksmd scanning whatever this test does. */
static char *keepalive;

static void keep_scanning(void)
{
	if (!keepalive) {
		keepalive = map_pages(1);
		fill_page(keepalive, 0, 0xabc1);
	}
	merge_pages(keepalive, 1);
}

/*
 * map_pages() between two PROT_NONE guard pages: a mapping of its own in
 * smaps, which no neighbour can merge with.
 */
static char *map_alone(size_t pages)
{
	char *g = mmap(NULL, (pages + 2) * page_size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (g == MAP_FAILED ||
	    mprotect(g + page_size, pages * page_size, PROT_READ | PROT_WRITE)) {
		perror("mmap");
		exit(2);
	}
	madvise(g + page_size, pages * page_size, MADV_NOHUGEPAGE);
	memset(g + page_size, 0, pages * page_size);
	return g + page_size;
}

static long get_merge(void)
{
	return prctl(PR_GET_MEMORY_MERGE, 0, 0, 0, 0);
}

static long ksm_kb(const void *p)
{
	return smaps_kb(0, p, "KSM");
}

struct region {
	char *p;
	long kb;	/* what smaps "KSM:" must read */
};

static bool region_ksm_is(void *arg)
{
	struct region *r = arg;

	return ksm_kb(r->p) == r->kb;
}

/* Wait until @p's mapping shows @kb of KSM pages in smaps. */
static bool wait_ksm_kb(char *p, long kb)
{
	struct region r = { p, kb };

	if (ksm_wait_until(region_ksm_is, &r, 20))
		return true;
	ktap_diag("smaps KSM: %ld kB, want %ld", ksm_kb(p), kb);
	return false;
}

/* @pages copies of one page: all mapped from one page frame? */
static bool one_frame(const char *p, int pages)
{
	unsigned long pfn = page_pfn(p);
	bool one = pfn != 0;

	for (int i = 1; i < pages; i++)
		one &= page_pfn(p + i * page_size) == pfn;
	if (one)
		return true;
	for (int i = 0; i < pages; i++)
		ktap_diag("page %d: pfn %#lx", i, page_pfn(p + i * page_size));
	ktap_diag("pages_shared %ld pages_sharing %ld stable_node_dups %ld",
		  ksm_read("pages_shared"), ksm_read("pages_sharing"),
		  ksm_read("stable_node_dups"));
	return false;
}

static void fill_copies(char *p, int pages, unsigned int seed)
{
	for (int i = 0; i < pages; i++)
		fill_pattern(p + i * page_size, seed, 0);
}

static size_t copies_wrong(const char *p, int pages, unsigned int seed)
{
	size_t bad = 0;

	for (int i = 0; i < pages; i++)
		bad += !holds_pattern(p + i * page_size, seed, 0);
	return bad;
}

/* Set, get, and the arguments mainline refuses. */
static void test_set_get(void)
{
	CHECK(get_merge() == 0, "PR_GET_MEMORY_MERGE %ld at start", get_merge());
	CHECK(prctl(PR_SET_MEMORY_MERGE, 1, 1, 0, 0) == -1 && errno == EINVAL,
	      "PR_SET with arg3 set: %s", strerror(errno));
	CHECK(prctl(PR_GET_MEMORY_MERGE, 1, 0, 0, 0) == -1 && errno == EINVAL,
	      "PR_GET with arg2 set: %s", strerror(errno));
	CHECK(get_merge() == 0, "flag %ld after refused calls", get_merge());
	CHECK(prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) == 0, "PR_SET 1: %s",
	      strerror(errno));
	CHECK(get_merge() == 1, "PR_GET %ld after PR_SET 1", get_merge());
	CHECK(prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) == 0, "PR_SET 1 again");
	CHECK(get_merge() == 1, "PR_GET %ld after PR_SET 1 twice", get_merge());
	CHECK(prctl(PR_SET_MEMORY_MERGE, 0, 0, 0, 0) == 0, "PR_SET 0: %s",
	      strerror(errno));
	CHECK(get_merge() == 0, "PR_GET %ld after PR_SET 0", get_merge());
	CHECK(prctl(PR_SET_MEMORY_MERGE, 0, 0, 0, 0) == 0, "PR_SET 0 again");
	ktap_result(checks_passed(), "set_and_get");
}

static char *existing, *fresh;

/* A mapping made and filled before PR_SET_MEMORY_MERGE merges once it is set. */
static void test_existing_mapping(void)
{
	existing = map_alone(PAGES);
	fill_copies(existing, PAGES, 0x5101);
	keep_scanning();
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_kb(existing) == 0, "KSM %ld kB before the prctl",
	      ksm_kb(existing));
	CHECK(mergeable_flag(existing) == 0, "VmFlags mg %d before the prctl",
	      mergeable_flag(existing));
	CHECK(prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0) == 0, "PR_SET 1: %s",
	      strerror(errno));
	CHECK(mergeable_flag(existing) == 1, "VmFlags mg %d after the prctl",
	      mergeable_flag(existing));
	CHECK(wait_ksm_kb(existing, PAGES * page_size / 1024), "merged");
	CHECK(one_frame(existing, PAGES), "one page frame for %d copies",
	      PAGES);
	CHECK(copies_wrong(existing, PAGES, 0x5101) == 0, "content");
	CHECK(self_merging_pages() >= PAGES, "ksm_merging_pages %ld",
	      self_merging_pages());
	ktap_result(checks_passed(), "existing_mapping_merges_without_madvise");
}

/* A mapping made after PR_SET_MEMORY_MERGE merges too. */
static void test_new_mapping(void)
{
	fresh = map_alone(PAGES);
	fill_copies(fresh, PAGES, 0x5102);
	CHECK(mergeable_flag(fresh) == 1, "VmFlags mg %d", mergeable_flag(fresh));
	CHECK(wait_ksm_kb(fresh, PAGES * page_size / 1024), "merged");
	CHECK(one_frame(fresh, PAGES), "one page frame for %d copies", PAGES);
	CHECK(page_pfn(fresh) != page_pfn(existing), "apart from the other");
	CHECK(copies_wrong(fresh, PAGES, 0x5102) == 0, "content");
	CHECK(copies_wrong(existing, PAGES, 0x5101) == 0, "content (existing)");
	CHECK(self_merging_pages() >= 2 * PAGES, "ksm_merging_pages %ld",
	      self_merging_pages());
	ktap_result(checks_passed(), "new_mapping_merges_without_madvise");
}

/* The child of a merge-any process is merge-any: its own pages merge. */
static void test_fork(void)
{
	int status = -1;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		char *p;

		CHECK(get_merge() == 1, "PR_GET %ld in the child", get_merge());
		p = map_alone(PAGES);
		fill_copies(p, PAGES, 0x5103);
		CHECK(mergeable_flag(p) == 1, "VmFlags mg %d in the child",
		      mergeable_flag(p));
		CHECK(wait_ksm_kb(p, PAGES * page_size / 1024),
		      "child's mapping merged");
		CHECK(one_frame(p, PAGES), "one page frame in the child");
		CHECK(copies_wrong(p, PAGES, 0x5103) == 0, "child's content");
		CHECK(copies_wrong(existing, PAGES, 0x5101) == 0,
		      "inherited content");
		CHECK(self_merging_pages() >= PAGES,
		      "child's ksm_merging_pages %ld", self_merging_pages());
		fflush(stdout);
		_exit(checks_passed() ? 0 : 1);
	}
	CHECK(pid > 0, "fork");
	CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "child status %#x", status);
	CHECK(get_merge() == 1, "parent's flag %ld", get_merge());
	ktap_result(checks_passed(), "inherited_across_fork");
}

static bool no_merging_pages(void *arg)
{
	return self_merging_pages() == 0;
}

/* PR_SET_MEMORY_MERGE 0 unmerges at once, keeps content, merges no more. */
static void test_unset(void)
{
	CHECK(prctl(PR_SET_MEMORY_MERGE, 0, 0, 0, 0) == 0, "PR_SET 0: %s",
	      strerror(errno));
	CHECK(get_merge() == 0, "PR_GET %ld", get_merge());
	CHECK(ksm_kb(existing) == 0, "existing: KSM %ld kB after PR_SET 0",
	      ksm_kb(existing));
	CHECK(ksm_kb(fresh) == 0, "new: KSM %ld kB after PR_SET 0",
	      ksm_kb(fresh));
	CHECK(mergeable_flag(existing) == 0 && mergeable_flag(fresh) == 0,
	      "VmFlags mg %d and %d after PR_SET 0", mergeable_flag(existing),
	      mergeable_flag(fresh));
	CHECK(copies_wrong(existing, PAGES, 0x5101) == 0, "content (existing)");
	CHECK(copies_wrong(fresh, PAGES, 0x5102) == 0, "content (new)");
	/*
	 * Clearing the flag took MADV_MERGEABLE off every mapping too.
	 * ksm_merging_pages follows when ksmd next looks (mainline counts
	 * the rmap_items it still has in the stable tree).
	 */
	keep_scanning();
	CHECK(ksm_wait_until(no_merging_pages, NULL, 20),
	      "ksm_merging_pages %ld", self_merging_pages());
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_kb(existing) == 0 && ksm_kb(fresh) == 0,
	      "merged again: KSM %ld and %ld kB", ksm_kb(existing),
	      ksm_kb(fresh));
	CHECK(self_merging_pages() == 0, "ksm_merging_pages %ld after scans",
	      self_merging_pages());
	ktap_result(checks_passed(), "unset_unmerges");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(5);
	CHECK(ksm_reset() == 0, "reset");
	test_set_get();
	test_existing_mapping();
	test_new_mapping();
	test_fork();
	test_unset();
	munmap(existing - page_size, (PAGES + 2) * page_size);
	munmap(fresh - page_size, (PAGES + 2) * page_size);
	return ktap_finish();
}
