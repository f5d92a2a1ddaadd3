// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_chains.c - page-sharing chains: max_page_sharing caps the mappings
 * of one KSM page, so more copies of one content make several KSM pages
 * (mainline's "chain" of "dups", counted in stable_node_chains and
 * stable_node_dups); a dup whose KSM page has gone is pruned within
 * stable_node_chains_prune_millisecs, so the counters follow live pages.
 *
 * Eight copies of one page with max_page_sharing=2 make four KSM pages of
 * two mappings each: one chain, four dups. Both mappings of one of them are
 * then written (each gets a private copy: that KSM page is freed) and
 * given the content back, so that ksmd merges them into a new KSM page:
 * with the stale dup pruned the chain has four dups again, not five.
 * Unmapping the copies then leaves no dup, and run=2 no chain.
 *
 * dups_go_with_their_last_sharer (samepage only): a KSM page that a pipe
 * still holds (vmsplice) once its mappings are gone is no dup any more.
 * Mainline keeps counting it until the page is freed: stock skips.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ksmtest.h"

#define COPIES 8
#define LIMIT 2
#define SEED 0xc4a1

struct chain_want {
	long shared, sharing, chains, dups;
	char *p;	/* if set, the copies must also be on shared frames */
};

/* Distinct page frames behind the copies; @pfn receives them. */
static int count_frames(char *p, unsigned long *pfn, int *max_on_one)
{
	int frames = 0;

	*max_on_one = 0;
	for (int i = 0; i < COPIES; i++) {
		unsigned long f = page_pfn(p + i * page_size);
		int j, n = 0;

		for (j = 0; j < frames && pfn[j] != f; j++)
			;
		if (j == frames)
			pfn[frames++] = f;
		for (int k = 0; k < COPIES; k++)
			n += page_pfn(p + k * page_size) == f;
		if (n > *max_on_one)
			*max_on_one = n;
	}
	return frames;
}

static bool chain_is(void *arg)
{
	struct chain_want *w = arg;
	unsigned long pfn[COPIES];
	int most;

	/*
	 * Counters that still count a KSM page whose mappings were all
	 * copied on write (until ksmd visits them) can read as wanted
	 * before the copies merged again: the frames say when they did.
	 */
	if (w->p && (count_frames(w->p, pfn, &most) != w->shared ||
		     most != LIMIT))
		return false;
	return ksm_read("pages_shared") == w->shared &&
	       ksm_read("pages_sharing") == w->sharing &&
	       ksm_read("stable_node_chains") == w->chains &&
	       ksm_read("stable_node_dups") == w->dups;
}

static void diag_counts(const char *when)
{
	ktap_diag("%s: shared %ld sharing %ld unshared %ld chains %ld dups %ld",
		  when, ksm_read("pages_shared"), ksm_read("pages_sharing"),
		  ksm_read("pages_unshared"), ksm_read("stable_node_chains"),
		  ksm_read("stable_node_dups"));
}

static bool copies_hold(char *p)
{
	bool ok = true;

	for (int i = 0; i < COPIES; i++)
		ok &= CHECK(holds_pattern(p + i * page_size, SEED, 0),
			    "copy %d lost its content", i);
	return ok;
}

static void test_chain(char *p)
{
	struct chain_want want = { COPIES / LIMIT, COPIES / LIMIT, 1,
				   COPIES / LIMIT, p };
	unsigned long pfn[COPIES];
	int frames, most;

	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_write("max_page_sharing", LIMIT) == 0,
	      "max_page_sharing=%d", LIMIT);
	CHECK(ksm_write("stable_node_chains_prune_millisecs", 20) == 0,
	      "stable_node_chains_prune_millisecs=20");
	for (int i = 0; i < COPIES; i++)
		fill_pattern(p + i * page_size, SEED, 0);
	CHECK(merge_pages(p, COPIES) == 0, "madvise");
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_until(chain_is, &want, 30), "not one chain of %ld dups",
	      want.dups);
	diag_counts("merged");
	frames = count_frames(p, pfn, &most);
	CHECK(frames == COPIES / LIMIT, "%d frames, want %d", frames,
	      COPIES / LIMIT);
	CHECK(most == LIMIT, "%d copies on one frame, want %d", most, LIMIT);
	CHECK(self_merging_pages() == COPIES, "ksm_merging_pages %ld",
	      self_merging_pages());
	copies_hold(p);
	ktap_result(checks_passed(), "max_page_sharing_makes_a_chain");
}

static void test_prune(char *p)
{
	struct chain_want want = { COPIES / LIMIT, COPIES / LIMIT, 1,
				   COPIES / LIMIT, p };
	unsigned long f = page_pfn(p), old[COPIES];
	int frames, most, broken = 0;

	/*
	 * Copy on write both mappings of the first copy's KSM page, with
	 * ksmd paused: running, it may merge the first copy back into that
	 * page (it still has a sharer and room) before the second is written.
	 */
	CHECK(ksm_pause() == 0, "run=0");
	for (int i = 0; i < COPIES; i++) {
		if (page_pfn(p + i * page_size) != f)
			continue;
		p[i * page_size] ^= 0x5a;
		fill_pattern(p + i * page_size, SEED, 0);
		broken++;
	}
	CHECK(broken == LIMIT, "%d mappings of frame %#lx, want %d", broken,
	      f, LIMIT);
	for (int i = 0; i < COPIES; i++)
		CHECK(page_pfn(p + i * page_size) != f,
		      "copy %d still maps the freed KSM page", i);
	copies_hold(p);
	CHECK(ksm_resume() == 0, "run=1");
	/* Merged again: four live dups, the stale one pruned. */
	CHECK(ksm_wait_until(chain_is, &want, 30),
	      "the freed KSM page's dup was not pruned");
	diag_counts("re-merged");
	frames = count_frames(p, old, &most);
	CHECK(frames == COPIES / LIMIT && most == LIMIT,
	      "%d frames, at most %d copies on one", frames, most);
	copies_hold(p);
	ktap_result(checks_passed(), "stale_dup_is_pruned");
}

static void test_unmap(char *p)
{
	double t;

	CHECK(ksm_wait_scans(1), "scan");
	munmap(p, COPIES * page_size);
	CHECK(ksm_wait_counts(0, 0, KSM_ANY, 0), "after munmap");
	/*
	 * Mainline keeps the emptied chain itself until a lookup or run=2
	 * drops it, so only the dups must go. A dup whose last mapping
	 * ksmd forgot while munmap() had yet to zap the page (the VMA goes
	 * first) is pruned once ksmd finds the page gone: on both kernels
	 * within stable_node_chains_prune_millisecs of passes, which a
	 * page of its own keeps coming.
	 */
	t = monotonic_seconds() + 1 +
	    2e-3 * ksm_read("stable_node_chains_prune_millisecs");
	while (ksm_read("stable_node_dups") && monotonic_seconds() < t)
		if (!ksm_wait_scans_with_page(1, SEED + 0x77, 0))
			break;
	CHECK(ksm_read("stable_node_dups") == 0, "dups %ld",
	      ksm_read("stable_node_dups"));
	diag_counts("unmapped");
	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_read("stable_node_chains") == 0 &&
	      ksm_read("stable_node_dups") == 0,
	      "after run=2: chains %ld dups %ld",
	      ksm_read("stable_node_chains"), ksm_read("stable_node_dups"));
	ktap_result(checks_passed(), "chain_gone_after_unmap_and_unmerge");
}

static void test_prune_input(void)
{
	long before = ksm_read("stable_node_chains_prune_millisecs");

	CHECK(ksm_write_str("stable_node_chains_prune_millisecs", "soon") ==
	      -EINVAL, "\"soon\" accepted");
	CHECK(ksm_write("stable_node_chains_prune_millisecs", -1) == -EINVAL,
	      "-1 accepted");
	CHECK(ksm_read("stable_node_chains_prune_millisecs") == before,
	      "value changed to %ld",
	      ksm_read("stable_node_chains_prune_millisecs"));
	ktap_result(checks_passed(), "prune_millisecs_rejects_bad_input");
}

/* Put the page at @p in the pipe @fd by reference; true if it went. */
static bool splice_in(int fd, char *p)
{
	struct iovec iov = { p, page_size };

	return vmsplice(fd, &iov, 1, 0) == (ssize_t)page_size;
}

static void test_held_by_pipe(void)
{
	struct chain_want want = { COPIES / LIMIT, COPIES / LIMIT, 1,
				   COPIES / LIMIT, NULL };
	char *buf = malloc(page_size);
	int pfd[2] = { -1, -1 };
	char *p;

	if (ksm_read("max_kernel_pages") < 0) {
		ktap_skip_named("dups_go_with_their_last_sharer",
				"mainline counts them until the page is freed");
		free(buf);
		return;
	}
	p = map_pages(COPIES);
	for (int i = 0; i < COPIES; i++)
		fill_pattern(p + i * page_size, SEED, 0);
	CHECK(merge_pages(p, COPIES) == 0, "madvise");
	CHECK(ksm_resume() == 0, "run=1");
	want.p = p;
	CHECK(ksm_wait_until(chain_is, &want, 30), "not one chain of %ld dups",
	      want.dups);
	/* The pipe holds a reference to each KSM page, not a copy. */
	CHECK(pipe(pfd) == 0, "pipe");
	for (int i = 0; i < COPIES; i += LIMIT)
		CHECK(splice_in(pfd[1], p + i * page_size), "vmsplice %d", i);
	munmap(p, COPIES * page_size);
	CHECK(ksm_wait_counts(0, 0, KSM_ANY, 0), "after munmap");
	CHECK(ksm_read("stable_node_dups") == 0 &&
	      ksm_read("stable_node_chains") == 0,
	      "pages_shared 0, yet chains %ld dups %ld",
	      ksm_read("stable_node_chains"), ksm_read("stable_node_dups"));
	diag_counts("held by a pipe");
	for (int i = 0; i < COPIES; i += LIMIT)
		CHECK(buf && read(pfd[0], buf, page_size) == (ssize_t)page_size &&
		      holds_pattern(buf, SEED, 0),
		      "page %d read back from the pipe", i);
	close(pfd[0]);
	close(pfd[1]);
	free(buf);
	ktap_result(checks_passed(), "dups_go_with_their_last_sharer");
}

int main(void)
{
	char *p;

	ksm_save_settings();
	ktap_plan(5);
	if (ksm_reset()) {
		ktap_skip_named("ksm_chains", "no KSM");
		return ktap_finish();
	}
	/* A unique page keeps ksmd scanning once the copies are unmapped. */
	p = map_pages(1);
	fill_pattern(p, SEED + 1, 0);
	CHECK(merge_pages(p, 1) == 0, "madvise");
	p = map_pages(COPIES);
	test_chain(p);
	test_prune(p);
	test_unmap(p);
	test_prune_input();
	test_held_by_pipe();
	ksm_reset();
	return ktap_finish();
}
