// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_abi_scan.c - the settings that shape ksmd's scans, as mm/ksm.c of
 * mainline 6.12 has them:
 *   smart_scan: unique pages that stay unmerged are skipped on later scans
 *	(pages_skipped grows); with smart_scan=0 none is; duplicates merge
 *	all the same.
 *   advisor_mode=scan-time: pages_to_scan is retuned after full scans, and
 *	is the advisor's (a write is EINVAL); back to none, pages_to_scan is
 *	100 (set_advisor_defaults()).
 *   max_page_sharing: no KSM page has more sharers than that; more copies
 *	make more KSM pages of the same content, counted as one chain in
 *	stable_node_chains and as stable_node_dups.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define UNIQUE 64
#define PAIRS 16

struct at_least {
	const char *name;
	long value;
};

static bool counter_at_least(void *arg)
{
	struct at_least *a = arg;

	return ksm_read(a->name) >= a->value;
}

/* smart_scan=0: unique pages are scanned every time, never skipped. */
static void test_smart_scan_off(void)
{
	char *p = map_pages(UNIQUE);
	long skipped;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_read("smart_scan") == 0, "smart_scan %ld",
	      ksm_read("smart_scan"));
	for (int i = 0; i < UNIQUE; i++)
		fill_page(p, i, 0x5c01);
	skipped = ksm_read("pages_skipped");
	CHECK(merge_pages(p, UNIQUE) == 0, "madvise");
	CHECK(ksm_wait_counts(0, 0, UNIQUE, 0), "unique pages unshared");
	CHECK(ksm_wait_scans(10), "scans");
	CHECK(ksm_read("pages_skipped") == skipped, "pages_skipped %ld, was %ld",
	      ksm_read("pages_skipped"), skipped);
	CHECK(ksm_wait_counts(0, 0, UNIQUE, 0), "still unshared");
	CHECK(pages_wrong(p, UNIQUE, 0x5c01) == 0, "content");
	munmap(p, UNIQUE * page_size);
	ktap_result(checks_passed(), "smart_scan_off_skips_nothing");
}

/*
 * smart_scan=1: after a few scans that merge nothing, unique pages are
 * skipped (mainline: each one first on its fifth scan, then more and more
 * often); twin pairs among them merge as ever.
 */
static void test_smart_scan_on(void)
{
	char *u = map_pages(UNIQUE), *d = map_pages(2 * PAIRS);
	struct at_least want = { "pages_skipped", 0 };
	long skipped;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("smart_scan", 1) == 0, "smart_scan=1");
	for (int i = 0; i < UNIQUE; i++)
		fill_page(u, i, 0x5c02);
	for (int i = 0; i < 2 * PAIRS; i++)
		fill_pattern(d + i * page_size, 0x5c03, i / 2);
	skipped = ksm_read("pages_skipped");
	CHECK(merge_pages(u, UNIQUE) == 0 && merge_pages(d, 2 * PAIRS) == 0,
	      "madvise");
	CHECK(ksm_wait_counts(PAIRS, PAIRS, KSM_ANY, KSM_ANY),
	      "%d pairs merged with smart_scan on", PAIRS);
	want.value = skipped + UNIQUE;
	CHECK(ksm_wait_until(counter_at_least, &want, 15),
	      "pages_skipped %ld, was %ld", ksm_read("pages_skipped"), skipped);
	ktap_diag("pages_skipped grew by %ld", ksm_read("pages_skipped") - skipped);
	CHECK(self_merging_pages() == 2 * PAIRS, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(pages_wrong(u, UNIQUE, 0x5c02) == 0, "unique content");
	for (int i = 0; i < 2 * PAIRS; i++)
		CHECK(holds_pattern(d + i * page_size, 0x5c03, i / 2),
		      "twin page %d", i);
	/* Turned off again, the count stops. */
	CHECK(ksm_write("smart_scan", 0) == 0, "smart_scan=0");
	CHECK(ksm_wait_scans(1), "scan");
	skipped = ksm_read("pages_skipped");
	CHECK(ksm_wait_scans(4), "scans");
	CHECK(ksm_read("pages_skipped") == skipped,
	      "pages_skipped %ld, was %ld with smart_scan=0",
	      ksm_read("pages_skipped"), skipped);
	munmap(u, UNIQUE * page_size);
	munmap(d, 2 * PAIRS * page_size);
	ktap_result(checks_passed(), "smart_scan_skips_unique_pages");
}

/*
 * The scan-time advisor. Its first pages_to_scan is advisor_min_pages_to_scan;
 * here a full scan (8 batches of 8 pages, 300 ms apart) lasts about 2.4 s,
 * more than the 1 s target, so the advisor must raise it. Mainline's first
 * retune gives 10 (its floor, at most a tenth of the CPU per page), ours
 * moves toward the target; either way not 8, and never above the maximum.
 */
static void test_advisor(void)
{
	const long min = 8, max = 2000;
	char *p = map_pages(UNIQUE);
	long pages = min, seen = min, start;
	bool moved = false, in_range = true;

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < UNIQUE; i++)
		fill_page(p, i, 0x5c04);
	CHECK(ksm_write("advisor_min_pages_to_scan", min) == 0, "min");
	CHECK(ksm_write("advisor_max_pages_to_scan", max) == 0, "max");
	CHECK(ksm_write("advisor_target_scan_time", 1) == 0, "target");
	CHECK(ksm_write("sleep_millisecs", 300) == 0, "sleep_millisecs");
	CHECK(merge_pages(p, UNIQUE) == 0, "madvise");
	/* Paused: the end of the scan under way cannot retune it yet. */
	CHECK(ksm_pause() == 0, "run=0");
	CHECK(ksm_write_str("advisor_mode", "scan-time") == 0, "scan-time");
	pages = ksm_read("pages_to_scan");
	CHECK(pages == min, "pages_to_scan %ld, want %ld", pages, min);
	CHECK(ksm_write("pages_to_scan", 100) == -EINVAL,
	      "pages_to_scan accepted a write under the advisor");
	pages = ksm_read("pages_to_scan");
	CHECK(pages == min, "pages_to_scan %ld after write", pages);
	CHECK(ksm_resume() == 0, "run=1");

	start = ksm_read("full_scans");
	while (start >= 0 && ksm_read("full_scans") < start + 6) {
		pages = ksm_read("pages_to_scan");
		if (pages != min && !moved) {
			moved = true;
			ktap_diag("pages_to_scan %ld after %ld full scans", pages,
				  ksm_read("full_scans") - start);
		}
		if (pages < 1 || pages > max) {
			in_range = false;
			seen = pages;
		}
		if (moved && ksm_read("full_scans") >= start + 2)
			break;
		usleep(20000);
	}
	CHECK(moved, "pages_to_scan stayed %ld for 6 full scans", min);
	CHECK(in_range, "pages_to_scan %ld, outside [1, %ld]", seen, max);
	CHECK(ksm_write_str("advisor_mode", "none") == 0, "none");
	CHECK(ksm_read("pages_to_scan") == 100, "pages_to_scan %ld, want 100",
	      ksm_read("pages_to_scan"));
	CHECK(ksm_write("pages_to_scan", 1000) == 0, "pages_to_scan writable");
	CHECK(pages_wrong(p, UNIQUE, 0x5c04) == 0, "content");
	ksm_write("advisor_min_pages_to_scan", 500);
	ksm_write("advisor_max_pages_to_scan", 30000);
	ksm_write("advisor_target_scan_time", 200);
	munmap(p, UNIQUE * page_size);
	ktap_result(checks_passed(), "scan_time_advisor_retunes_pages_to_scan");
}

struct sharing_want {
	long copies, limit;
};

/* With ksmd paused: every copy merged, in at least copies/limit KSM pages. */
static bool sharing_capped(void *arg)
{
	struct sharing_want *w = arg;
	struct ksm_counts c;

	if (ksm_pause())
		return false;
	ksm_get_counts(&c);
	ksm_resume();
	return c.shared * w->limit >= w->copies &&
	       c.shared + c.sharing == w->copies && c.unshared == 0 &&
	       c.volatile_ == 0;
}

/* 10 copies with max_page_sharing=4: three KSM pages at least, 4 sharers at most. */
static void test_max_page_sharing(void)
{
	const int copies = 10, limit = 4;
	struct sharing_want want = { copies, limit };
	unsigned long pfn[10];
	int frames = 0;
	char *p = map_pages(copies);
	long shared, chains, dups;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_write("max_page_sharing", limit) == 0, "max_page_sharing=%d",
	      limit);
	CHECK(ksm_read("max_page_sharing") == limit, "max_page_sharing %ld",
	      ksm_read("max_page_sharing"));
	for (int i = 0; i < copies; i++)
		fill_pattern(p + i * page_size, 0x5c05, 0);
	CHECK(merge_pages(p, copies) == 0, "madvise");
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_until(sharing_capped, &want, 20),
	      "shared %ld sharing %ld unshared %ld volatile %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"),
	      ksm_read("pages_unshared"), ksm_read("pages_volatile"));
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(sharing_capped(&want), "after 2 more scans: shared %ld sharing %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"));
	ktap_diag("pages_shared %ld, pages_sharing %ld, stable_node_chains %ld, stable_node_dups %ld",
		  ksm_read("pages_shared"), ksm_read("pages_sharing"),
		  ksm_read("stable_node_chains"), ksm_read("stable_node_dups"));

	/* Count the page frames and the copies on each. */
	for (int i = 0; i < copies; i++) {
		unsigned long f = page_pfn(p + i * page_size);
		int j, n = 0;

		for (j = 0; j < frames && pfn[j] != f; j++)
			;
		if (j == frames)
			pfn[frames++] = f;
		for (int k = 0; k < copies; k++)
			n += page_pfn(p + k * page_size) == f;
		CHECK(n <= limit, "%d copies on one frame", n);
	}
	CHECK(frames == ksm_read("pages_shared"), "%d frames, pages_shared %ld",
	      frames, ksm_read("pages_shared"));
	CHECK(self_merging_pages() == copies, "ksm_merging_pages %ld",
	      self_merging_pages());
	for (int i = 0; i < copies; i++)
		CHECK(holds_pattern(p + i * page_size, 0x5c05, 0), "copy %d", i);
	CHECK(ksm_write("max_page_sharing", 256) == -EBUSY,
	      "max_page_sharing changed with KSM pages");
	/* One content over the limit: one chain, all its KSM pages dups. */
	CHECK(ksm_pause() == 0, "run=0");
	shared = ksm_read("pages_shared");
	chains = ksm_read("stable_node_chains");
	dups = ksm_read("stable_node_dups");
	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_write("max_page_sharing", 256) == 0, "max_page_sharing=256");
	for (int i = 0; i < copies; i++)
		CHECK(holds_pattern(p + i * page_size, 0x5c05, 0),
		      "copy %d after run=2", i);
	munmap(p, copies * page_size);
	ktap_result(checks_passed(), "max_page_sharing_caps_sharers");

	CHECK(chains == 1, "stable_node_chains %ld, want 1", chains);
	CHECK(dups == shared, "stable_node_dups %ld, want pages_shared %ld",
	      dups, shared);
	CHECK(ksm_read("stable_node_chains") == 0 &&
	      ksm_read("stable_node_dups") == 0,
	      "after run=2: stable_node_chains %ld, stable_node_dups %ld",
	      ksm_read("stable_node_chains"), ksm_read("stable_node_dups"));
	ktap_result(checks_passed(), "stable_node_chains_and_dups");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(5);
	test_smart_scan_off();
	test_smart_scan_on();
	test_advisor();
	test_max_page_sharing();
	ksm_reset();
	return ktap_finish();
}
