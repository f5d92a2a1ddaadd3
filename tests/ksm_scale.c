// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_scale.c - what one process's sharing costs everyone else: a KSM
 * page with many forked sharers whose processes all exit at once.
 *
 * A parent merges PAGES equal pages into one KSM page (max_page_sharing
 * is PAGES), forks KIDS children that pause, and waits until ksmd has
 * seen them all: pages_sharing counts every child's mappings. Then the
 * children are killed, and ksmd has to forget PAGES x KIDS mappings of
 * that one page. Bounds, derived from what the same kernel just did:
 *
 *   - ksmd completes two full scans after the children are reaped within
 *     RECOVER_PASSES of its own full scans with them alive (each visited
 *     every one of those mappings once) and RECOVER_SLACK seconds: the
 *     cost of forgetting a mapping is of the order of visiting it, not of
 *     the number of mappings the page has;
 *   - a settings write that takes ksmd's lock (max_page_sharing, refused
 *     with EBUSY while KSM pages exist) made at once after the reaping
 *     returns within one such scan and WRITE_SLACK seconds;
 *   - then pages_sharing is the parent's alone and its pages hold their
 *     content.
 *
 *   fork_kill_400            400 children
 *   fork_kill_2000           2,000 children
 *
 * Mainline behaviour: both also pass on stock.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksmtest.h"

#define PAGES 256
#define SEED 90
#define RECOVER_PASSES 6
#define RECOVER_SLACK 3.0
#define WRITE_SLACK 1.0

/* Seconds ksmd takes for one full scan, from the start of the next one. */
static double pass_seconds(void)
{
	long f = ksm_read("full_scans");
	double t;

	if (!ksm_wait_scans_until(f + 1, KSM_WAIT_SECONDS))
		return -1;
	t = monotonic_seconds();
	if (!ksm_wait_scans_until(f + 2, KSM_WAIT_SECONDS))
		return -1;
	return monotonic_seconds() - t;
}

static void fork_kill(int kids, const char *name)
{
	pid_t *pid = calloc(kids, sizeof(*pid));
	double pass, t, recover, write_s;
	long all = (long)PAGES * (kids + 1) - 1;
	int started = 0, err;
	char *p = NULL;
	long f;

	if (!CHECK(pid, "calloc") || !CHECK(ksm_reset() == 0, "reset"))
		goto out;
	p = map_pages(PAGES);
	for (int i = 0; i < PAGES; i++)
		fill_pattern(p + i * page_size, SEED, 0);
	if (!CHECK(merge_pages(p, PAGES) == 0, "madvise") ||
	    !CHECK(ksm_wait_counter("pages_sharing", PAGES - 1),
		   "parent merged: pages_sharing %ld",
		   ksm_read("pages_sharing")))
		goto out;
	started = fork_paused(pid, kids);
	if (!CHECK(started == kids, "forked %d of %d", started, kids) ||
	    !CHECK(ksm_wait_counter("pages_sharing", all),
		   "children seen: pages_sharing %ld of %ld",
		   ksm_read("pages_sharing"), all))
		goto out;
	pass = pass_seconds();
	if (!CHECK(pass >= 0, "a full scan with the children"))
		goto out;
	kill_all(pid, started);
	started = 0;
	t = monotonic_seconds();
	f = ksm_read("full_scans");
	err = ksm_write("max_page_sharing", PAGES + 1);
	write_s = monotonic_seconds() - t;
	CHECK(err == -EBUSY, "max_page_sharing with KSM pages: %d", err);
	CHECK(ksm_wait_scans_until(f + 2, RECOVER_PASSES * pass +
				   RECOVER_SLACK + KSM_WAIT_SECONDS),
	      "two full scans after the exits");
	recover = monotonic_seconds() - t;
	ktap_diag("%s: a full scan with the children %.3f s, two after their exit %.3f s, a settings write %.3f s",
		  name, pass, recover, write_s);
	CHECK(recover <= RECOVER_PASSES * pass + RECOVER_SLACK,
	      "recovery %.3f s > %d x %.3f + %.1f s", recover, RECOVER_PASSES,
	      pass, RECOVER_SLACK);
	CHECK(write_s <= pass + WRITE_SLACK, "settings write %.3f s > %.3f + %.1f s",
	      write_s, pass, WRITE_SLACK);
	CHECK(ksm_read("pages_sharing") == PAGES - 1,
	      "pages_sharing %ld after the exits", ksm_read("pages_sharing"));
	for (int i = 0; i < PAGES; i++)
		CHECK(holds_pattern(p + i * page_size, SEED, 0),
		      "parent page %d", i);
out:
	if (started)
		kill_all(pid, started);
	if (p)
		munmap(p, PAGES * page_size);
	free(pid);
	ktap_result(checks_passed(), "%s", name);
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(2);
	fork_kill(400, "fork_kill_400");
	fork_kill(2000, "fork_kill_2000");
	ksm_reset();
	return ktap_finish();
}
