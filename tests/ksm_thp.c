// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_thp.c - KSM and transparent huge pages. A mergeable area backed by
 * a THP (2 MiB aligned, MADV_HUGEPAGE, checked in smaps AnonHugePages)
 * whose subpages repeat each other, or repeat another area's, gets them
 * merged: ksmd splits the THP as needed, the content stays right and the
 * counters follow. Then what mainline 6.12 does when something tries to
 * make a THP of a range holding KSM pages again, with MADV_COLLAPSE and
 * with khugepaged (run in bounded time with a short scan_sleep_millisecs,
 * waiting on its full_scans): the test expects the same, and checks the
 * content throughout.
 *
 * A writer of a THP-backed mergeable area pays nothing for ksmd's change
 * detection (thp_writer_faults): rewritten every 1, 2 and 4 full scans,
 * eight times, its pages take no fault and stay huge, as on mainline;
 * with samepage's notifier test driver, the same in an mm with a
 * secondary MMU, whose huge pages ksmd never protects.
 *
 * khugepaged is kept away (MADV_NOHUGEPAGE once the THP exists) except
 * where it is the subject, so that it cannot collapse what ksmd splits.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ksmtest.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define THP_DIR "/sys/kernel/mm/transparent_hugepage/"
#define KHP_DIR THP_DIR "khugepaged/"
#define HPAGE (2UL << 20)
#define SUB 512			/* subpages of a THP */

/* Settings changed here, restored at exit. */
static struct {
	const char *path;
	char old[64];
	bool changed;
} saved[8];
static int nsaved;

static int set_file(const char *path, const char *val)
{
	int i;

	for (i = 0; i < nsaved; i++)
		if (!strcmp(saved[i].path, path))
			break;
	if (i == nsaved && nsaved < (int)ARRAY_SIZE(saved)) {
		saved[i].path = path;
		if (read_file(path, saved[i].old, sizeof(saved[i].old)))
			return -ENOENT;
		nsaved++;
	}
	if (i < nsaved)
		saved[i].changed = true;
	return write_file(path, val);
}

/* Restore the settings changed since the @first one saved. */
static void restore_from(int first)
{
	char mode[64];

	for (int i = nsaved - 1; i >= first; i--) {
		const char *v = saved[i].old, *b = strchr(v, '[');

		if (!saved[i].changed)
			continue;
		/* Mode files read "always [madvise] never". */
		if (b && sscanf(b, "[%63[^]]", mode) == 1)
			v = mode;
		write_file(saved[i].path, v);
	}
	nsaved = first;
}

static void restore_files(void)
{
	restore_from(0);
}

/* The bracketed choice of a mode file, or "". */
static void thp_mode(const char *path, char *mode, size_t size)
{
	char buf[128], *b;

	mode[0] = '\0';
	if (read_file(path, buf, sizeof(buf)))
		return;
	b = strchr(buf, '[');
	if (b)
		snprintf(mode, size, "%.*s", (int)strcspn(b + 1, "]"), b + 1);
}

/* PMD-sized THPs for MADV_HUGEPAGE areas at least; false if impossible. */
static bool thp_setup(void)
{
	char mode[32];

	thp_mode(THP_DIR "enabled", mode, sizeof(mode));
	ktap_diag("transparent_hugepage/enabled: %s", mode);
	if (!mode[0])
		return false;
	if (!strcmp(mode, "never") &&
	    set_file(THP_DIR "enabled", "madvise"))
		return false;
	thp_mode(THP_DIR "hugepages-2048kB/enabled", mode, sizeof(mode));
	if (!strcmp(mode, "never") &&
	    set_file(THP_DIR "hugepages-2048kB/enabled", "inherit"))
		return false;
	return read_long(THP_DIR "hpage_pmd_size") == (long)HPAGE;
}

static long thp_kb(const void *p)
{
	return smaps_kb(0, p, "AnonHugePages");
}

/*
 * A 2 MiB aligned area of its own VMA, MADV_HUGEPAGE, faulted in: a THP
 * if one could be had (see thp_kb()). Then MADV_NOHUGEPAGE, which keeps
 * the THP but keeps khugepaged away.
 */
static char *map_thp(void)
{
	char *raw = mmap(NULL, 2 * HPAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *p;

	if (raw == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	p = (char *)(((unsigned long)raw + HPAGE - 1) & ~(HPAGE - 1));
	if (p > raw)
		munmap(raw, p - raw);
	munmap(p + HPAGE, raw + HPAGE - p);
	madvise(p, HPAGE, MADV_HUGEPAGE);
	*(volatile char *)p = 1;
	madvise(p, HPAGE, MADV_NOHUGEPAGE);
	return p;
}

/* What subpage @i of an area of kind @kind holds: a pattern. */
enum kind {
	WITHIN,		/* [0, 256): 16 contents 16 times; rest unique */
	HALF_X,		/* [0, 128): as HALF_Y's; rest unique */
	HALF_Y,		/* [0, 128): (seed, i); rest unique */
	FEW,		/* [0, FEW_DUPS): (seed, i); rest unique */
	SAME,		/* all (seed, i): two such THPs are equal */
};

#define FEW_DUPS 16

static void content_of(enum kind kind, unsigned int seed, int i,
		       unsigned int *s, size_t *n)
{
	*s = seed;
	*n = i;
	switch (kind) {
	case WITHIN:
		if (i < 256)
			*n = i % 16;
		else
			*s = seed + 1;
		break;
	case HALF_X:
		if (i >= 128)
			*s = seed + 1;
		break;
	case HALF_Y:
		if (i >= 128)
			*s = seed + 2;
		break;
	case FEW:
		if (i >= FEW_DUPS)
			*s = seed + 3;
		break;
	case SAME:
		break;
	}
}

static void fill_area(char *p, enum kind kind, unsigned int seed)
{
	unsigned int s;
	size_t n;

	for (int i = 0; i < SUB; i++) {
		content_of(kind, seed, i, &s, &n);
		fill_pattern(p + i * page_size, s, n);
	}
}

/* Subpages of @p not holding what they should; @skip is not checked. */
static int area_wrong(const char *p, enum kind kind, unsigned int seed,
		      int skip)
{
	unsigned int s;
	size_t n;
	int bad = 0;

	for (int i = 0; i < SUB; i++) {
		if (i == skip)
			continue;
		content_of(kind, seed, i, &s, &n);
		bad += !holds_pattern(p + i * page_size, s, n);
	}
	return bad;
}

static bool thp_ok = true;

/* A THP-backed area of @kind, or NULL (and the test skipped). */
static char *thp_area(enum kind kind, unsigned int seed, const char *name)
{
	char *p = map_thp();

	if (thp_kb(p) != (long)(HPAGE >> 10)) {
		ktap_diag("AnonHugePages %ld kB: no THP", thp_kb(p));
		munmap(p, HPAGE);
		thp_ok = false;
		ktap_skip_named(name, "no THP could be allocated");
		return NULL;
	}
	fill_area(p, kind, seed);
	CHECK(thp_kb(p) == (long)(HPAGE >> 10), "still a THP once filled");
	return p;
}

/* khugepaged: full_scans goes up by @scans; false after 120 s. */
static bool khugepaged_wait(int scans)
{
	long target = read_long(KHP_DIR "full_scans") + scans;
	time_t deadline = time(NULL) + 120;

	while (read_long(KHP_DIR "full_scans") < target) {
		if (time(NULL) > deadline) {
			ktap_diag("khugepaged: full_scans %ld, want %ld",
				  read_long(KHP_DIR "full_scans"), target);
			return false;
		}
		usleep(10000);
	}
	return true;
}

/*
 * WITHIN: one THP whose first 256 subpages hold 16 contents 16 times each
 * and the other 256 unique ones. ksmd splits it and merges the copies:
 * 16 KSM pages with 240 further sharers, 256 unshared. A write to a merged
 * subpage copies it.
 */
static char *test_within(void)
{
	const unsigned int seed = 0x7a01;
	long split = vmstat("thp_split_page");
	char *p;

	CHECK(ksm_reset() == 0, "reset");
	p = thp_area(WITHIN, seed, "thp_split_merge_within");
	if (!p)
		return NULL;
	CHECK(merge_pages(p, SUB) == 0, "madvise");
	CHECK(ksm_wait_counts(16, 240, 256, 0), "merged");
	CHECK(area_wrong(p, WITHIN, seed, -1) == 0, "content after merging");
	CHECK(thp_kb(p) == 0, "THP split: AnonHugePages %ld kB", thp_kb(p));
	CHECK(vmstat("thp_split_page") > split, "thp_split_page %ld -> %ld",
	      split, vmstat("thp_split_page"));
	CHECK(self_merging_pages() == 256, "ksm_merging_pages %ld",
	      self_merging_pages());
	fill_pattern(p, 0x7a02, 0);
	CHECK(holds_pattern(p, 0x7a02, 0), "written subpage");
	CHECK(area_wrong(p, WITHIN, seed, 0) == 0, "content after cow");
	CHECK(ksm_wait_counts(16, 239, 257, 0), "after cow");
	ktap_result(checks_passed(), "thp_split_merge_within");
	return p;
}

/*
 * Pause ksmd (it stays paused) and MADV_COLLAPSE @p, between
 * MADV_HUGEPAGE and MADV_NOHUGEPAGE: 0, or the errno it failed with.
 */
static int collapse_paused(char *p)
{
	int err;

	CHECK(ksm_pause() == 0, "pause ksmd");
	CHECK(madvise(p, HPAGE, MADV_HUGEPAGE) == 0, "MADV_HUGEPAGE");
	err = madvise(p, HPAGE, MADV_COLLAPSE) ? errno : 0;
	CHECK(madvise(p, HPAGE, MADV_NOHUGEPAGE) == 0, "MADV_NOHUGEPAGE");
	return err;
}

/*
 * MADV_COLLAPSE of the WITHIN area (ksmd paused): each of its KSM pages is
 * mapped 16 times in the range, and khugepaged's isolation meets the same
 * locked folio again, so mainline fails with EAGAIN and leaves the range
 * as it was: small pages, the KSM pages still mapped.
 */
static void test_collapse_within(char *p)
{
	const unsigned int seed = 0x7a01;
	int err;

	if (!p) {
		ktap_skip_named("madv_collapse_within", "no THP");
		return;
	}
	err = collapse_paused(p);
	ktap_diag("MADV_COLLAPSE: %d (%s), AnonHugePages %ld kB, merging %ld",
		  err ? -1 : 0, err ? strerror(err) : "ok", thp_kb(p),
		  self_merging_pages());
	CHECK(err == EAGAIN, "MADV_COLLAPSE fails with EAGAIN");
	CHECK(thp_kb(p) == 0, "AnonHugePages %ld kB", thp_kb(p));
	CHECK(holds_pattern(p, 0x7a02, 0) && !area_wrong(p, WITHIN, seed, 0),
	      "content after MADV_COLLAPSE");
	CHECK(ksm_resume() == 0, "resume ksmd");
	CHECK(ksm_wait_counts(16, 239, 257, 0), "counts after MADV_COLLAPSE");
	CHECK(holds_pattern(p, 0x7a02, 0) && !area_wrong(p, WITHIN, seed, 0),
	      "content after scans");
	CHECK(ksm_wait_scans(2), "ksmd goes on scanning");
	munmap(p, HPAGE);
	ktap_result(checks_passed(), "madv_collapse_within");
}

/*
 * HALF: two THPs X and Y whose first 128 subpages are the same, the rest
 * unique. ksmd splits both huge mappings and merges the 128 pairs: 128 KSM pages, each
 * mapped once in X and once in Y.
 */
static bool half_setup(char **x, char **y, unsigned int seed, const char *name)
{
	long split = vmstat("thp_split_pmd");

	CHECK(ksm_reset() == 0, "reset");
	*x = thp_area(HALF_X, seed, name);
	if (!*x)
		return false;
	*y = thp_area(HALF_Y, seed, name);
	if (!*y) {
		munmap(*x, HPAGE);
		return false;
	}
	CHECK(merge_pages(*x, SUB) == 0 && merge_pages(*y, SUB) == 0,
	      "madvise");
	CHECK(ksm_wait_counts(128, 128, 2 * SUB - 256, 0), "merged");
	CHECK(area_wrong(*x, HALF_X, seed, -1) == 0 &&
	      area_wrong(*y, HALF_Y, seed, -1) == 0, "content after merging");
	CHECK(thp_kb(*x) == 0 && thp_kb(*y) == 0,
	      "THPs split: AnonHugePages %ld and %ld kB", thp_kb(*x),
	      thp_kb(*y));
	CHECK(vmstat("thp_split_pmd") >= split + 2,
	      "thp_split_pmd %ld -> %ld", split, vmstat("thp_split_pmd"));
	return true;
}

struct xy {
	char *x, *y;
};

/* X is small pages again, its first 128 mapping Y's KSM pages. */
static bool x_merged(void *arg)
{
	struct xy *a = arg;

	if (thp_kb(a->x))
		return false;
	for (int i = 0; i < 128; i++) {
		unsigned long pfn = page_pfn(a->x + i * page_size);

		if (!pfn || pfn != page_pfn(a->y + i * page_size))
			return false;
	}
	return true;
}

/* Both HALF areas hold what they should. */
static void half_content(const char *x, const char *y, unsigned int seed)
{
	CHECK(area_wrong(x, HALF_X, seed, -1) == 0, "content of X");
	CHECK(area_wrong(y, HALF_Y, seed, -1) == 0, "content of Y");
}

/* ksmd resumes, splits X again and merges it back into Y's KSM pages. */
static void half_remerged(char *x, char *y, unsigned int seed)
{
	CHECK(ksm_resume() == 0, "resume ksmd");
	/* The counters may lag: ksmd fixes them when it passes X. */
	CHECK(ksm_wait_until(x_merged, &(struct xy){ x, y }, 20),
	      "X split and merged again: %ld kB", thp_kb(x));
	CHECK(ksm_wait_counts(128, 128, 2 * SUB - 256, 0), "merged again");
	CHECK(area_wrong(x, HALF_X, seed, -1) == 0 &&
	      area_wrong(y, HALF_Y, seed, -1) == 0, "content after scans");
}

/* ksmd goes on scanning; X and Y go; test @name's result. */
static void half_done(char *x, char *y, const char *name)
{
	CHECK(ksm_wait_scans(2), "ksmd goes on scanning");
	munmap(x, HPAGE);
	munmap(y, HPAGE);
	ktap_result(checks_passed(), "%s", name);
}

static void test_across(void)
{
	const unsigned int seed = 0x7a11;
	char *x, *y;

	if (!half_setup(&x, &y, seed, "thp_split_merge_across"))
		return;
	CHECK(x_merged(&(struct xy){ x, y }), "X's subpages map Y's KSM pages");
	half_done(x, y, "thp_split_merge_across");
}

/*
 * MADV_COLLAPSE of X of HALF (ksmd paused): each KSM page is mapped once
 * in X, and mainline collapses the range, copying the KSM pages' content
 * into the new THP; Y keeps the KSM pages. Once ksmd runs again it splits
 * X once more and merges it back.
 */
static void test_collapse_across(void)
{
	const unsigned int seed = 0x7a21;
	char *x, *y;
	int err;

	if (!half_setup(&x, &y, seed, "madv_collapse_across"))
		return;
	err = collapse_paused(x);
	ktap_diag("MADV_COLLAPSE: %d (%s), AnonHugePages %ld kB",
		  err ? -1 : 0, err ? strerror(err) : "ok", thp_kb(x));
	CHECK(err == 0, "MADV_COLLAPSE: %s", strerror(err));
	CHECK(thp_kb(x) == (long)(HPAGE >> 10), "X is a THP: %ld kB",
	      thp_kb(x));
	half_content(x, y, seed);
	half_remerged(x, y, seed);
	half_done(x, y, "madv_collapse_across");
}

/*
 * khugepaged on X of HALF (ksmd paused), scanning every 100 ms: X has 128
 * PTEs mapping a page mapped elsewhere too (the KSM pages). With
 * max_ptes_shared 0 khugepaged refuses (thp_scan_exceed_share_pte); with
 * 256 (the default) it collapses X as MADV_COLLAPSE does. ksmd then merges
 * X back.
 */
static void test_khugepaged(void)
{
	const unsigned int seed = 0x7a31;
	int first = nsaved;
	long refused;
	char *x, *y;

	if (access(KHP_DIR "full_scans", R_OK)) {
		ktap_skip_named("khugepaged", "no khugepaged");
		return;
	}
	if (!half_setup(&x, &y, seed, "khugepaged"))
		return;
	CHECK(set_file(KHP_DIR "pages_to_scan", "4096") == 0, "pages_to_scan");
	CHECK(set_file(KHP_DIR "scan_sleep_millisecs", "100") == 0,
	      "scan_sleep_millisecs");
	CHECK(set_file(KHP_DIR "alloc_sleep_millisecs", "100") == 0,
	      "alloc_sleep_millisecs");
	CHECK(set_file(KHP_DIR "max_ptes_shared", "0") == 0,
	      "max_ptes_shared 0");
	CHECK(ksm_pause() == 0, "pause ksmd");
	refused = vmstat("thp_scan_exceed_share_pte");
	CHECK(madvise(x, HPAGE, MADV_HUGEPAGE) == 0, "MADV_HUGEPAGE");
	CHECK(khugepaged_wait(3), "khugepaged scans");
	ktap_diag("max_ptes_shared 0: AnonHugePages %ld kB, thp_scan_exceed_share_pte +%ld",
		  thp_kb(x), vmstat("thp_scan_exceed_share_pte") - refused);
	CHECK(thp_kb(x) == 0, "not collapsed: %ld kB", thp_kb(x));
	CHECK(vmstat("thp_scan_exceed_share_pte") > refused,
	      "thp_scan_exceed_share_pte did not move");
	CHECK(area_wrong(x, HALF_X, seed, -1) == 0, "content of X");

	CHECK(set_file(KHP_DIR "max_ptes_shared", "256") == 0,
	      "max_ptes_shared 256");
	CHECK(khugepaged_wait(3), "khugepaged scans");
	CHECK(madvise(x, HPAGE, MADV_NOHUGEPAGE) == 0, "MADV_NOHUGEPAGE");
	ktap_diag("max_ptes_shared 256: AnonHugePages %ld kB, pages_collapsed %ld",
		  thp_kb(x), read_long(KHP_DIR "pages_collapsed"));
	CHECK(thp_kb(x) == (long)(HPAGE >> 10), "collapsed: %ld kB",
	      thp_kb(x));
	half_content(x, y, seed);
	restore_from(first);
	half_remerged(x, y, seed);
	half_done(x, y, "khugepaged");
}

struct shared_want {
	long shared, sharing;
};

static bool shared_is(void *arg)
{
	struct shared_want *w = arg;

	return ksm_read("pages_shared") == w->shared &&
	       ksm_read("pages_sharing") == w->sharing;
}

/*
 * A THP of unique subpages, left to ksmd until each was hashed and found
 * unchanged, then written: one subpage takes a small page's content. ksmd
 * must see the change, though a clean PMD let it skip reading the
 * subpages (DOC: Clean huge pages in walk.c), and merge the two within
 * a few passes: fewer than the one in SP_RECHECK at which it would read
 * a subpage it trusted anyway. Smart scan is off: it would make the wait
 * depend on the subpage's age, on stock as on ours. samepage's
 * thp_split_min is 1 (mainline's choice: split at the first match); at
 * its default a THP with one match stays whole.
 */
static void test_change_seen(void)
{
	const unsigned int seed = 0x7a41, other = 0x7a49;
	struct shared_want merged = { 1, 1 };
	const int at = 300;
	char *p, *q;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("smart_scan", 0) == 0, "smart_scan=0");
	if (ksm_read("thp_split_min") >= 0)
		CHECK(ksm_write("thp_split_min", 1) == 0, "thp_split_min=1");
	p = thp_area(HALF_Y, seed, "thp_change_seen");
	if (!p)
		return;
	q = map_pages(1);
	fill_pattern(q, other, 0);
	CHECK(merge_pages(p, SUB) == 0 && merge_pages(q, 1) == 0, "madvise");
	CHECK(ksm_wait_counts(0, 0, SUB + 1, 0), "all unshared");
	CHECK(ksm_wait_scans(3), "scans");
	CHECK(thp_kb(p) == (long)(HPAGE >> 10), "still a THP");
	fill_pattern(p + at * page_size, other, 0);
	CHECK(ksm_wait_until(shared_is, &merged, 8),
	      "written subpage not merged: shared %ld sharing %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
	CHECK(holds_pattern(p + at * page_size, other, 0) &&
	      holds_pattern(q, other, 0), "merged content");
	CHECK(area_wrong(p, HALF_Y, seed, at) == 0, "content of the rest");
	munmap(q, page_size);
	munmap(p, HPAGE);
	ksm_write("smart_scan", 1);
	if (ksm_read("thp_split_min") >= 0)
		ksm_write("thp_split_min", 64);
	ktap_result(checks_passed(), "thp_change_seen");
}

/*
 * Two equal THPs X and Y merge into 512 KSM pages: both huge mappings are
 * split, as mainline does. The content is checked after the merge and
 * after a write. On samepage only one folio is split: a THP whose pages
 * all merge into the other's needs only its PMD split, and is freed whole.
 */
static void test_merged_whole(void)
{
	const unsigned int seed = 0x7a61;
	long split = vmstat("thp_split_page");
	long pmd = vmstat("thp_split_pmd");
	char *x, *y;

	CHECK(ksm_reset() == 0, "reset");
	x = thp_area(SAME, seed, "thp_merged_whole");
	if (!x)
		return;
	y = thp_area(SAME, seed, "thp_merged_whole");
	if (!y) {
		munmap(x, HPAGE);
		return;
	}
	CHECK(merge_pages(x, SUB) == 0 && merge_pages(y, SUB) == 0,
	      "madvise");
	CHECK(ksm_wait_counts(SUB, SUB, 0, 0), "merged");
	CHECK(!area_wrong(x, SAME, seed, -1) && !area_wrong(y, SAME, seed, -1),
	      "content after merging");
	CHECK(thp_kb(x) == 0 && thp_kb(y) == 0, "AnonHugePages %ld and %ld kB",
	      thp_kb(x), thp_kb(y));
	ktap_diag("thp_split_page +%ld, thp_split_pmd +%ld",
		  vmstat("thp_split_page") - split,
		  vmstat("thp_split_pmd") - pmd);
	CHECK(vmstat("thp_split_pmd") - pmd >= 2, "both PMDs split");
	/* samepage: the THP whose pages all merged away was freed whole. */
	if (ksm_read("thp_split_min") >= 0)
		CHECK(vmstat("thp_split_page") - split == 1,
		      "one folio split");
	fill_pattern(x, seed + 9, 0);
	CHECK(holds_pattern(x, seed + 9, 0) && !area_wrong(x, SAME, seed, 0) &&
	      !area_wrong(y, SAME, seed, -1), "content after a write");
	CHECK(ksm_wait_counts(SUB, SUB - 1, 1, 0), "after the write");
	munmap(x, HPAGE);
	munmap(y, HPAGE);
	ktap_result(checks_passed(), "thp_merged_whole");
}

/*
 * samepage only (stock splits a THP at its first match): a THP of which
 * FEW_DUPS subpages have equal small pages elsewhere stays whole and
 * unmerged with thp_split_min at 64, counted in huge_pages_kept; with
 * thp_split_min at FEW_DUPS it is split (huge_pages_split) and they
 * merge. The content is checked throughout.
 */
static void test_split_min(void)
{
	const unsigned int seed = 0x7a51;
	struct shared_want merged = { FEW_DUPS, FEW_DUPS };
	long split;
	char *p, *q;

	if (ksm_read("thp_split_min") < 0) {
		ktap_skip_named("thp_split_only_when_it_pays",
				"mainline splits at the first match");
		return;
	}
	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_read("thp_split_min") == 64, "thp_split_min %ld",
	      ksm_read("thp_split_min"));
	p = thp_area(FEW, seed, "thp_split_only_when_it_pays");
	if (!p)
		return;
	q = map_pages(FEW_DUPS);
	for (int i = 0; i < FEW_DUPS; i++)
		fill_pattern(q + i * page_size, seed, i);
	split = ksm_read("huge_pages_split");
	CHECK(merge_pages(p, SUB) == 0 && merge_pages(q, FEW_DUPS) == 0,
	      "madvise");
	CHECK(ksm_wait_scans(6), "scans");
	ktap_diag("thp_split_min 64: shared %ld sharing %ld kept %ld split %ld, AnonHugePages %ld kB",
		  ksm_read("pages_shared"), ksm_read("pages_sharing"),
		  ksm_read("huge_pages_kept"),
		  ksm_read("huge_pages_split") - split, thp_kb(p));
	CHECK(thp_kb(p) == (long)(HPAGE >> 10), "THP kept: %ld kB", thp_kb(p));
	CHECK(ksm_read("pages_sharing") == 0, "nothing merged");
	CHECK(ksm_read("huge_pages_kept") == 1, "huge_pages_kept %ld",
	      ksm_read("huge_pages_kept"));
	CHECK(ksm_read("huge_pages_split") == split, "huge_pages_split moved");
	CHECK(area_wrong(p, FEW, seed, -1) == 0, "content of the THP");

	CHECK(ksm_write("thp_split_min", FEW_DUPS) == 0, "thp_split_min=%d",
	      FEW_DUPS);
	CHECK(ksm_wait_until(shared_is, &merged, 8), "not merged: %ld %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
	CHECK(thp_kb(p) == 0, "THP split: %ld kB", thp_kb(p));
	CHECK(ksm_read("huge_pages_split") == split + 1,
	      "huge_pages_split +%ld", ksm_read("huge_pages_split") - split);
	CHECK(area_wrong(p, FEW, seed, -1) == 0, "content after merging");
	for (int i = 0; i < FEW_DUPS; i++)
		CHECK(holds_pattern(q + i * page_size, seed, i), "small page %d", i);
	fill_pattern(p, seed + 9, 0);
	CHECK(holds_pattern(p, seed + 9, 0) && holds_pattern(q, seed, 0) &&
	      area_wrong(p, FEW, seed, 0) == 0, "content after cow");
	munmap(q, FEW_DUPS * page_size);
	munmap(p, HPAGE);
	ksm_write("thp_split_min", 64);
	ktap_result(checks_passed(), "thp_split_only_when_it_pays");
}

/* samepage only: thp_split_min takes 1 to 512, and nothing else. */
static void test_split_min_input(void)
{
	static const char *const bad[] = { "0", "513", "-1", "abc", "\n" };

	if (ksm_read("thp_split_min") < 0) {
		ktap_skip_named("thp_split_min_rejects_bad_input",
				"no thp_split_min");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(ksm_write_str("thp_split_min", bad[i]) == -EINVAL &&
		      ksm_read("thp_split_min") == 64,
		      "thp_split_min \"%s\" refused, unchanged", bad[i]);
	CHECK(ksm_write("thp_split_min", 1) == 0 &&
	      ksm_read("thp_split_min") == 1, "thp_split_min=1");
	CHECK(ksm_write("thp_split_min", 512) == 0 &&
	      ksm_read("thp_split_min") == 512, "thp_split_min=512");
	ksm_write("thp_split_min", 64);
	ktap_result(checks_passed(), "thp_split_min_rejects_bad_input");
}

#define WRITER_ROUNDS 8

/*
 * A THP of unique subpages rewritten whole every @period full scans,
 * WRITER_ROUNDS times: the rewrites take no fault, the content is right
 * after each, the THP stays whole and nothing merges.
 */
static void thp_writer_period(int period)
{
	const unsigned int seed = 0x7a61;
	long faults = 0, before;
	char *p;

	p = thp_area(HALF_Y, seed, "thp_writer_faults");
	if (!p)
		return;
	CHECK(merge_pages(p, SUB) == 0, "madvise");
	for (int round = 0; round < WRITER_ROUNDS; round++) {
		unsigned int now = seed + 16 * (round + 1);

		before = minor_faults();
		fill_area(p, HALF_Y, now);
		faults += minor_faults() - before;
		if (!CHECK(area_wrong(p, HALF_Y, now, -1) == 0,
			   "content at period %d round %d", period, round))
			break;
		for (int s = 0; s < period; s++)
			if (!CHECK(ksm_step(), "scan"))
				break;
	}
	ktap_diag("period %d: %ld faults, AnonHugePages %ld kB", period,
		  faults, thp_kb(p));
	CHECK(faults == 0, "%ld faults at period %d", faults, period);
	CHECK(thp_kb(p) == (long)(HPAGE >> 10), "THP split at period %d",
	      period);
	CHECK(self_merging_pages() == 0, "merged: %ld", self_merging_pages());
	munmap(p, HPAGE);
}

static void thp_writer_periods(void)
{
	static const int periods[] = { 1, 2, 4 };

	if (!CHECK(ksm_reset() == 0, "reset") ||
	    !CHECK(ksm_step_mode() == 0, "step mode"))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(periods) && thp_ok; i++)
		thp_writer_period(periods[i]);
}

static void test_writer_faults(void)
{
	thp_writer_periods();
	if (thp_ok && ksm_read("protect_after_scans") >= 0)
		with_secondary_mmu(thp_writer_periods, "the THP writer");
	if (thp_ok)
		ktap_result(checks_passed(), "thp_writer_faults");
	CHECK(ksm_reset() == 0, "reset");
}

int main(void)
{
	static const char *const names[] = {
		"thp_split_merge_within", "madv_collapse_within",
		"thp_split_merge_across", "madv_collapse_across", "khugepaged",
		"thp_change_seen", "thp_split_only_when_it_pays",
		"thp_split_min_rejects_bad_input", "thp_writer_faults",
		"thp_merged_whole",
	};
	time_t started = time(NULL);

	ksm_save_settings();
	atexit(restore_files);
	ktap_plan(ARRAY_SIZE(names));
	if (!thp_setup())
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no transparent huge pages");
	test_collapse_within(test_within());
	if (thp_ok)
		test_across();
	else
		ktap_skip_named("thp_split_merge_across", "no THP");
	if (thp_ok)
		test_collapse_across();
	else
		ktap_skip_named("madv_collapse_across", "no THP");
	if (thp_ok)
		test_khugepaged();
	else
		ktap_skip_named("khugepaged", "no THP");
	if (thp_ok)
		test_change_seen();
	else
		ktap_skip_named("thp_change_seen", "no THP");
	if (thp_ok)
		test_split_min();
	else
		ktap_skip_named("thp_split_only_when_it_pays", "no THP");
	test_split_min_input();
	if (thp_ok)
		test_writer_faults();
	else
		ktap_skip_named("thp_writer_faults", "no THP");
	if (thp_ok)
		test_merged_whole();
	else
		ktap_skip_named("thp_merged_whole", "no THP");
	ktap_diag("%ld s", (long)(time(NULL) - started));
	return ktap_finish();
}
