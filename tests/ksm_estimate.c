// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_estimate.c - estimate mode (samepage's): with
 * /sys/kernel/mm/ksm/estimate=1 ksmd scans as usual but merges nothing,
 * and counts what a merge would make of the last complete pass:
 * estimated_pages_shared (KSM pages), estimated_pages_sharing (the further
 * pages that would map them, the saving), estimated_zero_pages (pages that
 * would map the zero page, under use_zero_pages=1), and per process and
 * per memory cgroup a line "ksm_estimated_pages N" of ksm_stat, present
 * only while estimate is 1. The figures are valid after two complete
 * passes; the tests read them after three, with ksmd paused.
 *
 * The clones: child c maps NPAGES pages, made mergeable: NP pages that
 * every clone holds alike (page j of one equals page j of another, no two
 * j alike), NU pages of its own, and NZ pages written full of zeroes.
 *
 *   estimate_clones: two clones, use_zero_pages=1. After three full scans
 *     nothing is merged (no KSM page, no zero page mapped, every page in a
 *     frame of its own, per pagemap), every page holds its content, and
 *     the estimate says NP KSM pages, NP further sharers, 2 * NZ zero pages
 *     and NP + NZ pages of each clone. Then, with estimate=0, the real
 *     merge agrees with the estimate: pages_shared, pages_sharing +
 *     ksm_zero_pages, and each clone's ksm_merging_pages + ksm_zero_pages.
 *   estimate_changes: the same, then clone 0 writes contents of its own
 *     into half of its NP shared pages: three full scans later the
 *     estimate has halved for the shared pages of both clones, and still
 *     nothing is merged.
 *   estimate_existing: clones 0 and 1 merged with estimate=0 stay merged
 *     once it is 1; clone 2, started then, is not merged, yet its pages
 *     count, as they would join the existing KSM pages; every clone's
 *     ksm_estimated_pages is what its ksm_merging_pages + ksm_zero_pages
 *     are after the real merge that follows, and so are the global
 *     figures: what the counters would be after the merge, the mappings
 *     merged already with them.
 *   estimate_domain: merge_domain=process, use_zero_pages=0: only each
 *     clone's own zero-filled pages would merge, like any other content
 *     (one KSM page each), and the clones' shared pages would not; the
 *     real merge agrees.
 *   estimate_memcg: clones 0 and 1 in cgroups a and b below ksm_estimate,
 *     clone 2 outside: each cgroup's memory.ksm_stat ksm_estimated_pages
 *     is the sum over its processes and those of its descendants (ksmd
 *     paused); the line goes once estimate is 0. Skips without the memory
 *     controller or memory.ksm_stat.
 *   estimate_off_absent: with estimate=0, pairs in this process merge as
 *     usual, /proc/self/ksm_stat has no ksm_estimated_pages line and the
 *     estimated_* files read 0; after a pass with estimate=1 has counted
 *     new pairs (not merged, nor by MADV_MERGE), writing 0 takes the line
 *     away and zeroes the files at once.
 *   estimate_bad_input: 2, -1 and "x" are EINVAL, the value unchanged;
 *     the estimated_* files are read-only.
 *
 * Estimates are checked within TOL_PCT percent, real merges exactly.
 * estimate is samepage's: every test skips on stock.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ksmtest.h"

#define NP		256	/* pages every clone holds alike */
#define NU		16	/* pages of a clone's own */
#define NZ		32	/* zero-filled pages of a clone */
#define NPAGES		(NP + NU + NZ)
#define NCLONES		3
#define NPAIRS		32	/* estimate_off_absent's pairs */
#define SEED		0xe570	/* shared pages: (SEED, j) */
#define SEED_OWN	(SEED + 1)	/* clone c's own: (SEED_OWN + c, j) */
#define SEED_NEW	(SEED + 8)	/* rewritten: (SEED_NEW + c, j) */
#define SEED_PAIRS	(SEED + 16)
#define TOL_PCT		3
#ifndef MADV_MERGE
#define MADV_MERGE	26	/* samepage's merge on request */
#endif
/* A page must be seen unchanged at two visits: two complete passes. */
#define SCANS_VALID	3
#define CG_P		CGROUP_ROOT "/ksm_estimate"
#define CG_A		CG_P "/a"
#define CG_B		CG_P "/b"

static const char *const names[] = {
	"estimate_clones", "estimate_changes", "estimate_existing",
	"estimate_domain", "estimate_memcg", "estimate_off_absent",
	"estimate_bad_input",
};

static const char *const est_files[] = {
	"estimated_pages_shared", "estimated_pages_sharing",
	"estimated_zero_pages",
};

/* What the clones hold, mapped before they fork and never touched here. */
static char *region;
static unsigned long zero_pfn;
static pid_t clone_pid[NCLONES];

/* Shared with the clones (MAP_SHARED, never mergeable): their PFNs. */
struct board {
	unsigned long pfn[NCLONES][NPAGES];
};

static struct board *bd;

/* Clone i of a kids_start() is clone first + i; it joins cg[i] if set. */
struct setup {
	const char *cg[NCLONES];
	int first;
};

/* What a merge makes of clones: the global figures and each clone's. */
struct want {
	long shared, sharing, zero;	/* pages_shared, _sharing, zero */
	long per_clone;		/* ksm_merging_pages + ksm_zero_pages */
	long pairs;		/* shared pages in clone 0's frame */
};

/* Two clones, use_zero_pages=1, one domain. */
static const struct want clones2 = { NP, NP, 2 * NZ, NP + NZ, NP };
/* Three clones, the same. */
static const struct want clones3 = { NP, 2 * NP, 3 * NZ, NP + NZ, 2 * NP };
/* Two clones, clone 0 having rewritten half of its shared pages. */
static const struct want halves2 = {
	NP / 2, NP / 2, 2 * NZ, NP / 2 + NZ, NP / 2
};

/* Two clones, use_zero_pages=0, merge_domain=process: zeroes each. */
static const struct want domains2 = { 2, 2 * (NZ - 1), 0, NZ, 0 };
/* Nothing merged. */
static const struct want none;

/* The estimate, as the files say. */
struct est {
	long shared, sharing, zero;
	long pid[NCLONES];	/* each clone's ksm_estimated_pages */
};

/* Is @got within TOL_PCT percent of @want? */
static bool near(long got, long want)
{
	return labs(got - want) * 100 <= labs(want) * TOL_PCT;
}

static long cg_key(const char *cg, const char *key)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/memory.ksm_stat", cg);
	return key_value(path, key);
}

static void fill_clone(int c)
{
	for (int j = 0; j < NP; j++)
		fill_page(region, j, SEED);
	for (int j = NP; j < NP + NU; j++)
		fill_page(region, j, SEED_OWN + c);
	memset(region + (NP + NU) * page_size, 0, NZ * page_size);
}

static bool clone_intact(int c, bool rewritten)
{
	const char *z = region + (NP + NU) * page_size;

	for (int j = 0; j < NP; j++)
		if (!page_holds(region, j,
				rewritten && j < NP / 2 ? SEED_NEW + c : SEED))
			return false;
	for (int j = NP; j < NP + NU; j++)
		if (!page_holds(region, j, SEED_OWN + c))
			return false;
	for (size_t i = 0; i < NZ * page_size; i++)
		if (z[i])
			return false;
	return true;
}

/*
 * A clone: joins its cgroup, fills and madvises its pages, replies 'r'
 * (or 'e'), then obeys: 'c' checks its content ('k' or 'x'), 'w' writes
 * contents of its own into the first half of its shared pages, 'p' puts
 * its PFNs on the board, 'q' quits.
 */
static int clone_main(void *arg, int i, int cmd_fd, int reply_fd)
{
	const struct setup *s = arg;
	int c = s->first + i;
	bool rewritten = false;
	char path[256], cmd;

	if (s->cg[i]) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", s->cg[i]);
		if (write_file(path, "0")) {
			kid_reply(reply_fd, 'e');
			return 1;
		}
	}
	fill_clone(c);
	if (merge_pages(region, NPAGES)) {
		kid_reply(reply_fd, 'e');
		return 1;
	}
	kid_reply(reply_fd, 'r');
	while ((cmd = kid_wait_cmd(cmd_fd)) != 'q') {
		switch (cmd) {
		case 'c':
			kid_reply(reply_fd,
				  clone_intact(c, rewritten) ? 'k' : 'x');
			break;
		case 'w':
			for (int j = 0; j < NP / 2; j++)
				fill_page(region, j, SEED_NEW + c);
			rewritten = true;
			kid_reply(reply_fd, 'k');
			break;
		case 'p':
			for (int j = 0; j < NPAGES; j++)
				bd->pfn[c][j] = page_pfn(region +
							 j * page_size);
			kid_reply(reply_fd, 'k');
			break;
		default:
			kid_reply(reply_fd, '?');
		}
	}
	return 0;
}

/* Start @n clones as @s says and wait until their pages are mergeable. */
static bool clones_start(struct kids *k, struct setup *s, int n)
{
	char r[NCLONES] = { 0 };
	bool ok;

	ok = CHECK(kids_start(k, n, clone_main, s) == 0, "fork clones");
	for (int i = 0; i < k->n; i++)
		clone_pid[s->first + i] = k->pid[i];
	ok = ok && CHECK(kids_collect(k, r), "clones ready");
	for (int i = 0; ok && i < n; i++)
		ok = CHECK(r[i] == 'r', "clone %d ready (%c)", s->first + i,
			   r[i]);
	return ok;
}

static void clones_stop(struct kids *k)
{
	kids_send(k, 'q');
	CHECK(kids_wait(k), "clones exit");
}

static void clones_intact(struct kids *k)
{
	CHECK(kids_sync_all(k, 'c', 'k'), "clones' content");
}

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a;
	unsigned long y = *(const unsigned long *)b;

	return (x > y) - (x < y);
}

/*
 * The frames of clones [0, @n), from the board: every page present,
 * @w->zero of them on the zero page, @w->sharing + @w->zero pages saved
 * (pages less the frames they take, the zero page not counted), and
 * @w->pairs shared pages of clones 1.. in clone 0's frame.
 */
static void check_frames(int n, const struct want *w)
{
	static unsigned long all[NCLONES * NPAGES];
	int m = 0, present = 0, distinct = 0, absent = 0, on_zero = 0;
	int pairs = 0;

	for (int c = 0; c < n; c++) {
		for (int j = 0; j < NPAGES; j++) {
			unsigned long pfn = bd->pfn[c][j];

			if (!pfn) {
				absent++;
				continue;
			}
			present++;
			if (pfn == zero_pfn) {
				on_zero++;
				continue;
			}
			all[m++] = pfn;
			pairs += c && j < NP && pfn == bd->pfn[0][j];
		}
	}
	qsort(all, m, sizeof(all[0]), cmp_ulong);
	for (int i = 0; i < m; i++)
		distinct += !i || all[i] != all[i - 1];
	CHECK(absent == 0, "%d pages not present", absent);
	CHECK(on_zero == w->zero, "%d pages on the zero page, want %ld",
	      on_zero, w->zero);
	CHECK(present - distinct == w->sharing + w->zero,
	      "%d pages saved by their frames, want %ld", present - distinct,
	      w->sharing + w->zero);
	CHECK(pairs == w->pairs, "%d shared pages in clone 0's frame, want %ld",
	      pairs, w->pairs);
}

/* Collect the PFNs of the clones of @k; check the frames of [0, @n). */
static void clones_frames(struct kids *k, int n, const struct want *w)
{
	if (CHECK(kids_sync_all(k, 'p', 'k'), "clones' PFNs"))
		check_frames(n, w);
}

static void read_estimate(struct est *e, int n)
{
	e->shared = ksm_read("estimated_pages_shared");
	e->sharing = ksm_read("estimated_pages_sharing");
	e->zero = ksm_read("estimated_zero_pages");
	for (int c = 0; c < n; c++)
		e->pid[c] = ksm_stat(clone_pid[c], "ksm_estimated_pages");
	ktap_diag("estimated: shared %ld sharing %ld zero %ld; %ld %ld %ld",
		  e->shared, e->sharing, e->zero, e->pid[0],
		  n > 1 ? e->pid[1] : -1, n > 2 ? e->pid[2] : -1);
}

/* The estimate of clones [0, @n) against what a merge would make, @w. */
static void check_estimate(const struct est *e, const struct want *w, int n)
{
	CHECK(near(e->shared, w->shared),
	      "estimated_pages_shared %ld, want %ld", e->shared, w->shared);
	CHECK(near(e->sharing, w->sharing),
	      "estimated_pages_sharing %ld, want %ld", e->sharing, w->sharing);
	CHECK(near(e->zero, w->zero), "estimated_zero_pages %ld, want %ld",
	      e->zero, w->zero);
	for (int c = 0; c < n; c++)
		CHECK(near(e->pid[c], w->per_clone),
		      "clone %d ksm_estimated_pages %ld, want %ld", c,
		      e->pid[c], w->per_clone);
}

/* Clone @c's merged pages: ksm_merging_pages + ksm_zero_pages. */
static long clone_merged(int c)
{
	return ksm_stat(clone_pid[c], "ksm_merging_pages") +
	       ksm_stat(clone_pid[c], "ksm_zero_pages");
}

/* Nothing of clones [0, @n) merged, nothing merged at all. */
static void check_unmerged(struct kids *k, int n)
{
	CHECK(ksm_read("pages_shared") == 0 && ksm_read("pages_sharing") == 0 &&
	      ksm_read("ksm_zero_pages") == 0,
	      "merged: pages_shared %ld pages_sharing %ld ksm_zero_pages %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"),
	      ksm_read("ksm_zero_pages"));
	for (int c = 0; c < n; c++)
		CHECK(clone_merged(c) == 0,
		      "clone %d merged %ld pages (ksm_merging_pages %ld)", c,
		      clone_merged(c),
		      ksm_stat(clone_pid[c], "ksm_merging_pages"));
	clones_frames(k, n, &none);
}

static bool merged_as(void *arg)
{
	const struct want *w = arg;

	return ksm_read("pages_shared") == w->shared &&
	       ksm_read("pages_sharing") == w->sharing &&
	       ksm_read("ksm_zero_pages") == w->zero;
}

/*
 * With ksmd paused: the real merge of clones [0, @n) is @w, and agrees
 * with the estimate @e, globally and clone by clone.
 */
static void check_merged(const struct est *e, const struct want *w, int n)
{
	long shared = ksm_read("pages_shared");
	long saved = ksm_read("pages_sharing") + ksm_read("ksm_zero_pages");

	CHECK(merged_as((void *)w),
	      "shared %ld sharing %ld zero %ld, want %ld %ld %ld",
	      shared, ksm_read("pages_sharing"), ksm_read("ksm_zero_pages"),
	      w->shared, w->sharing, w->zero);
	CHECK(near(e->shared, shared), "estimated_pages_shared %ld, real %ld",
	      e->shared, shared);
	CHECK(near(e->sharing + e->zero, saved),
	      "estimated saving %ld, real %ld (pages_sharing + ksm_zero_pages)",
	      e->sharing + e->zero, saved);
	for (int c = 0; c < n; c++) {
		long m = clone_merged(c);

		CHECK(m == w->per_clone, "clone %d merged %ld, want %ld", c, m,
		      w->per_clone);
		CHECK(near(e->pid[c], m),
		      "clone %d estimated %ld, merged %ld", c, e->pid[c], m);
	}
}

/*
 * ksm_reset() with use_zero_pages, merge_domain and estimate set before
 * ksmd runs again: nothing merged (merge_domain needs that), and nothing
 * merges before estimate is set.
 */
static void set_mode(int zero_pages, const char *domain, int estimate)
{
	CHECK(ksm_write("run", 2) == 0, "run=2");
	/* Unchecked, as ksm_reset(): merge_across_nodes needs NUMA. */
	ksm_reset_settings();
	CHECK(ksm_write("use_zero_pages", zero_pages) == 0,
	      "use_zero_pages=%d", zero_pages);
	CHECK(ksm_write_str("merge_domain", domain) == 0, "merge_domain=%s",
	      domain);
	CHECK(ksm_write("estimate", estimate) == 0, "estimate=%d", estimate);
	CHECK(ksm_resume() == 0, "run=1");
}

/* Wait until the estimate of the memory as it is now is valid: pause. */
static void estimate_settle(void)
{
	CHECK(ksm_wait_scans(SCANS_VALID), "%d full scans", SCANS_VALID);
	CHECK(ksm_pause() == 0, "run=0");
}

/* Two clones estimated, then merged: the two agree (@w). */
static void estimate_then_merge(const char *name, int zero_pages,
				const char *domain, const struct want *w)
{
	struct setup s = { .first = 0 };
	struct kids k;
	struct est e;

	set_mode(zero_pages, domain, 1);
	if (clones_start(&k, &s, 2)) {
		estimate_settle();
		read_estimate(&e, 2);
		check_estimate(&e, w, 2);
		check_unmerged(&k, 2);
		clones_intact(&k);
		CHECK(ksm_write("estimate", 0) == 0 && ksm_resume() == 0,
		      "estimate=0, run=1");
		CHECK(ksm_wait_until(merged_as, (void *)w, 20), "real merge");
		CHECK(ksm_pause() == 0, "run=0");
		check_merged(&e, w, 2);
		clones_frames(&k, 2, w);
		clones_intact(&k);
		CHECK(ksm_resume() == 0, "run=1");
	}
	clones_stop(&k);
	ktap_result(checks_passed(), "%s", name);
}

static void test_clones(void)
{
	CHECK(zero_pfn != 0, "the zero page's PFN");
	estimate_then_merge(names[0], 1, "system", &clones2);
}

static void test_changes(void)
{
	struct setup s = { .first = 0 };
	struct kids k;
	struct est e;
	char r = 0;

	set_mode(1, "system", 1);
	if (clones_start(&k, &s, 2)) {
		estimate_settle();
		read_estimate(&e, 2);
		check_estimate(&e, &clones2, 2);
		CHECK(ksm_resume() == 0, "run=1");
		CHECK(kid_call(&k, 0, 'w', &r) && r == 'k',
		      "clone 0 rewrites half of its shared pages (%c)", r);
		estimate_settle();
		read_estimate(&e, 2);
		check_estimate(&e, &halves2, 2);
		check_unmerged(&k, 2);
		clones_intact(&k);
		CHECK(ksm_write("estimate", 0) == 0 && ksm_resume() == 0,
		      "estimate=0, run=1");
	}
	clones_stop(&k);
	ktap_result(checks_passed(), "%s", names[1]);
}

static void test_existing(void)
{
	struct setup s01 = { .first = 0 }, s2 = { .first = 2 };
	struct kids k01, k2 = { .n = 0 };
	struct est e;

	set_mode(1, "system", 0);
	if (!clones_start(&k01, &s01, 2))
		goto out;
	CHECK(ksm_wait_until(merged_as, (void *)&clones2, 20),
	      "clones 0 and 1 merge");
	CHECK(ksm_write("estimate", 1) == 0, "estimate=1");
	if (!clones_start(&k2, &s2, 1))
		goto out;
	estimate_settle();
	read_estimate(&e, 3);
	/* 0 and 1 stay merged, 2 does not join them. */
	CHECK(merged_as((void *)&clones2),
	      "pages_shared %ld pages_sharing %ld ksm_zero_pages %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"),
	      ksm_read("ksm_zero_pages"));
	for (int c = 0; c < 3; c++)
		CHECK(clone_merged(c) == (c < 2 ? NP + NZ : 0),
		      "clone %d merged %ld", c, clone_merged(c));
	if (CHECK(kids_sync_all(&k01, 'p', 'k') &&
		  kids_sync_all(&k2, 'p', 'k'), "clones' PFNs"))
		check_frames(3, &clones2);
	/* Each clone's pages would be merged: all three count in full. */
	for (int c = 0; c < 3; c++)
		CHECK(near(e.pid[c], NP + NZ),
		      "clone %d ksm_estimated_pages %ld, want %d", c, e.pid[c],
		      NP + NZ);
	/*
	 * Clone 2's pages would join the KSM pages and the zero page: the
	 * global figures are what the counters would be after the merge,
	 * the mappings merged already with them.
	 */
	check_estimate(&e, &clones3, 3);
	clones_intact(&k01);
	clones_intact(&k2);
	/* The real merge: clone 2 joins, as the estimate said. */
	CHECK(ksm_write("estimate", 0) == 0 && ksm_resume() == 0,
	      "estimate=0, run=1");
	CHECK(ksm_wait_until(merged_as, (void *)&clones3, 20),
	      "clone 2 merges");
	CHECK(ksm_pause() == 0, "run=0");
	check_merged(&e, &clones3, 3);
	if (CHECK(kids_sync_all(&k01, 'p', 'k') &&
		  kids_sync_all(&k2, 'p', 'k'), "clones' PFNs"))
		check_frames(3, &clones3);
	clones_intact(&k01);
	clones_intact(&k2);
	CHECK(ksm_resume() == 0, "run=1");
out:
	kids_send(&k2, 'q');
	clones_stop(&k01);
	CHECK(kids_wait(&k2), "clone 2 exits");
	ktap_result(checks_passed(), "%s", names[2]);
}

static void test_domain(void)
{
	estimate_then_merge(names[3], 0, "process", &domains2);
}

static void test_memcg(void)
{
	struct setup s = { .cg = { CG_A, CG_B, NULL }, .first = 0 };
	struct kids k = { .n = 0 };
	static const char *const cgs[] = { CG_A, CG_B, CG_P };
	long a, b, p;
	struct est e;
	int err;

	err = memcg_create(CG_P);
	if (!err)
		err = write_file(CG_P "/cgroup.subtree_control", "+memory");
	if (!err)
		err = memcg_create(CG_A) ?: memcg_create(CG_B);
	if (err || access(CG_A "/memory.ksm_stat", R_OK)) {
		ktap_skip_named(names[4], err ? "no memory cgroups" :
				"no memory.ksm_stat");
		goto out;
	}
	set_mode(1, "system", 1);
	if (!clones_start(&k, &s, 3))
		goto done;
	estimate_settle();
	read_estimate(&e, 3);
	check_estimate(&e, &clones3, 3);
	a = cg_key(CG_A, "ksm_estimated_pages");
	b = cg_key(CG_B, "ksm_estimated_pages");
	p = cg_key(CG_P, "ksm_estimated_pages");
	ktap_diag("memory.ksm_stat ksm_estimated_pages: a %ld b %ld parent %ld",
		  a, b, p);
	CHECK(a == e.pid[0], "a: %ld, its clone %ld", a, e.pid[0]);
	CHECK(b == e.pid[1], "b: %ld, its clone %ld", b, e.pid[1]);
	CHECK(p == e.pid[0] + e.pid[1], "parent: %ld, a and b's clones %ld",
	      p, e.pid[0] + e.pid[1]);
	CHECK(near(p, 2 * (NP + NZ)), "parent: %ld, want %d", p,
	      2 * (NP + NZ));
	/* The line goes with estimate=0; the others stay. */
	CHECK(ksm_write("estimate", 0) == 0, "estimate=0");
	for (size_t i = 0; i < ARRAY_SIZE(cgs); i++)
		CHECK(cg_key(cgs[i], "ksm_estimated_pages") == -1 &&
		      cg_key(cgs[i], "ksm_merging_pages") == 0,
		      "%s: ksm_estimated_pages %ld, ksm_merging_pages %ld",
		      cgs[i], cg_key(cgs[i], "ksm_estimated_pages"),
		      cg_key(cgs[i], "ksm_merging_pages"));
	for (int c = 0; c < 3; c++)
		CHECK(ksm_stat(clone_pid[c], "ksm_estimated_pages") == -1,
		      "clone %d: ksm_estimated_pages %ld", c,
		      ksm_stat(clone_pid[c], "ksm_estimated_pages"));
	clones_intact(&k);
	CHECK(ksm_resume() == 0, "run=1");
done:
	clones_stop(&k);
	ktap_result(checks_passed(), "%s", names[4]);
out:
	cgroup_remove(CG_A);
	cgroup_remove(CG_B);
	cgroup_remove(CG_P);
}

static bool all_pairs_shared(void *arg)
{
	return pairs_shared(arg, NPAIRS) == NPAIRS;
}

/*
 * estimate=0: no line in /proc/self/ksm_stat, the files read 0;
 * ksm_merging_pages is @merging (KSM_ANY: any).
 */
static void check_off(const char *when, long merging)
{
	long m = ksm_stat(0, "ksm_merging_pages");

	CHECK(ksm_read("estimate") == 0, "%s: estimate %ld", when,
	      ksm_read("estimate"));
	CHECK(ksm_stat(0, "ksm_estimated_pages") == -1,
	      "%s: ksm_estimated_pages %ld", when,
	      ksm_stat(0, "ksm_estimated_pages"));
	/* The other lines stay. */
	CHECK(m >= 0 && (merging == KSM_ANY || m == merging),
	      "%s: ksm_merging_pages %ld, want %ld", when, m, merging);
	for (size_t i = 0; i < ARRAY_SIZE(est_files); i++)
		CHECK(ksm_read(est_files[i]) == 0, "%s: %s %ld", when,
		      est_files[i], ksm_read(est_files[i]));
}

static void test_off_absent(void)
{
	char *a, *b;

	set_mode(0, "system", 0);
	a = map_pairs(NPAIRS, SEED_PAIRS);
	CHECK(merge_pages(a, 2 * NPAIRS) == 0, "madvise");
	CHECK(ksm_wait_until(all_pairs_shared, a, 20), "pairs merge");
	/* Paused: the last pair's counters follow its page tables. */
	CHECK(ksm_pause() == 0, "run=0");
	check_off("merged", 2 * NPAIRS);
	CHECK(pairs_hold(a, NPAIRS, SEED_PAIRS), "content");
	CHECK(ksm_resume() == 0, "run=1");
	munmap(a, 2 * NPAIRS * page_size);

	/* New pairs, estimated; estimate=0 takes the figures away. */
	CHECK(ksm_write("estimate", 1) == 0, "estimate=1");
	b = map_pairs(NPAIRS, SEED_PAIRS + 1);
	CHECK(merge_pages(b, 2 * NPAIRS) == 0, "madvise");
	estimate_settle();
	CHECK(near(ksm_stat(0, "ksm_estimated_pages"), 2 * NPAIRS),
	      "ksm_estimated_pages %ld, want %d",
	      ksm_stat(0, "ksm_estimated_pages"), 2 * NPAIRS);
	CHECK(near(ksm_read("estimated_pages_shared"), NPAIRS),
	      "estimated_pages_shared %ld, want %d",
	      ksm_read("estimated_pages_shared"), NPAIRS);
	CHECK(near(ksm_read("estimated_pages_sharing"), NPAIRS),
	      "estimated_pages_sharing %ld, want %d",
	      ksm_read("estimated_pages_sharing"), NPAIRS);
	CHECK(pairs_shared(b, NPAIRS) == 0, "%d pairs merged",
	      pairs_shared(b, NPAIRS));
	/* A merge on request merges nothing under estimate either. */
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(madvise(b, 2 * NPAIRS * page_size, MADV_MERGE) == 0,
	      "MADV_MERGE: %s", strerror(errno));
	CHECK(pairs_shared(b, NPAIRS) == 0, "%d pairs merged by MADV_MERGE",
	      pairs_shared(b, NPAIRS));
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(ksm_write("estimate", 0) == 0, "estimate=0");
	check_off("estimated, then estimate=0", KSM_ANY);
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_until(all_pairs_shared, b, 20), "new pairs merge");
	CHECK(ksm_pause() == 0, "run=0");
	check_off("new pairs merged", 2 * NPAIRS);
	CHECK(pairs_hold(b, NPAIRS, SEED_PAIRS + 1), "content");
	CHECK(ksm_resume() == 0, "run=1");
	munmap(b, 2 * NPAIRS * page_size);
	ktap_result(checks_passed(), "%s", names[5]);
}

static void test_bad_input(void)
{
	static const char *const bad[] = { "2", "-1", "x" };
	struct stat st = {};
	char path[128];

	for (long v = 1; v >= 0; v--) {
		CHECK(ksm_write("estimate", v) == 0, "estimate=%ld", v);
		for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
			CHECK(ksm_write_str("estimate", bad[i]) == -EINVAL &&
			      ksm_read("estimate") == v,
			      "\"%s\" at %ld: EINVAL, unchanged (%ld)",
			      bad[i], v, ksm_read("estimate"));
	}
	for (size_t i = 0; i < ARRAY_SIZE(est_files); i++) {
		snprintf(path, sizeof(path), KSM_DIR "%s", est_files[i]);
		CHECK(stat(path, &st) == 0 && !(st.st_mode & 0222),
		      "%s read-only (mode %o)", est_files[i],
		      (unsigned int)st.st_mode & 0777);
		CHECK(ksm_write(est_files[i], 5) < 0 &&
		      ksm_read(est_files[i]) == 0,
		      "a write to %s fails, value %ld", est_files[i],
		      ksm_read(est_files[i]));
	}
	ktap_result(checks_passed(), "%s", names[6]);
}

/* The zero page's PFN: what a read fault maps. */
static unsigned long find_zero_pfn(void)
{
	char *probe = map_unfaulted(1);
	unsigned long pfn;

	(void)*(volatile char *)probe;
	pfn = page_pfn(probe);
	munmap(probe, page_size);
	return pfn;
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(ARRAY_SIZE(names));
	if (ksm_read("estimate") < 0)
		return ktap_skip_all(names, ARRAY_SIZE(names),
				     "no estimate (not samepage)");
	if (!CHECK(ksm_reset() == 0, "reset"))
		return ktap_skip_all(names, ARRAY_SIZE(names), "no KSM");
	region = map_unfaulted(NPAGES);
	bd = mmap(NULL, sizeof(*bd), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (bd == MAP_FAILED)
		return ktap_skip_all(names, ARRAY_SIZE(names), "mmap");
	zero_pfn = find_zero_pfn();
	test_clones();
	test_changes();
	test_existing();
	test_domain();
	test_memcg();
	test_off_absent();
	test_bad_input();
	return ktap_finish();
}
