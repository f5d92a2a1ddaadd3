// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_counters.c - pages_shared, pages_sharing, pages_unshared,
 * pages_volatile, full_scans and pages_scanned as ksm.rst defines them:
 *   pages_shared    how many shared pages are being used (KSM pages)
 *   pages_sharing   how many more sites are sharing them
 *   pages_unshared  how many pages unique but repeatedly checked
 *   pages_volatile  how many pages changing too fast for a tree
 *   full_scans      how many times all mergeable areas have been scanned
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

/* N unique mergeable pages: pages_unshared == N, nothing shared. */
static void test_unique(void)
{
	const int n = 100;
	char *p = map_pages(n);
	long scanned;

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < n; i++)
		fill_page(p, i, 31);
	CHECK(merge_pages(p, n) == 0, "madvise");
	CHECK(ksm_wait_counts(0, 0, n, 0), "%d unique pages unshared", n);
	scanned = ksm_read("pages_scanned");
	/* Two full scans take in at least one whole pass over the area. */
	CHECK(ksm_wait_scans(2), "scans");
	CHECK(ksm_read("pages_scanned") - scanned >= n,
	      "pages_scanned grew by %ld", ksm_read("pages_scanned") - scanned);
	CHECK(ksm_wait_counts(0, 0, n, 0), "still unshared");
	CHECK(self_merging_pages() == 0, "ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(pages_wrong(p, n, 31) == 0, "content");
	munmap(p, n * page_size);
	ktap_result(checks_passed(), "unique_pages_are_unshared");
}

static int kid_same(void *arg, int i, int cmd, int reply)
{
	int n = *(int *)arg;
	char *p = map_pages(n);

	for (int j = 0; j < n; j++)
		fill_page(p, j, 33);
	if (merge_pages(p, n))
		return 1;
	kid_reply(reply, 'r');
	while (kid_wait_cmd(cmd) == 'c')
		kid_reply(reply, pages_wrong(p, n, 33) ? 'x' :
			  self_merging_pages() == n ? 'm' : 'u');
	return 0;
}

/* K processes, N identical distinct pages: shared N, sharing (K-1)*N. */
static void test_k_processes(void)
{
	int n = 50, kids = 4;
	char replies[4];
	struct kids k;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(kids_start(&k, kids, kid_same, &n) == 0, "fork");
	CHECK(kids_collect(&k, replies), "ready");
	CHECK(ksm_wait_counts(n, (kids - 1) * n, 0, 0), "shared/sharing");
	CHECK(kids_sync(&k, 'c', replies), "sync");
	for (int i = 0; i < kids; i++)
		CHECK(replies[i] == 'm', "child %d replied %c", i, replies[i]);
	kids_send(&k, 'q');
	CHECK(kids_wait(&k), "children exit");
	ktap_result(checks_passed(), "k_processes_shared_and_sharing");
}

/*
 * One process, D pages in C classes of identical content plus U unique
 * pages: C KSM pages with D - C sharers beyond them, U unshared.
 */
static void test_mixed(void)
{
	const int d = 60, classes = 6, u = 20;
	char *p = map_pages(d + u);

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < d; i++)
		fill_pattern(p + i * page_size, 35, i % classes);
	for (int i = d; i < d + u; i++)
		fill_page(p, i, 36);
	CHECK(merge_pages(p, d + u) == 0, "madvise");
	CHECK(ksm_wait_counts(classes, d - classes, u, 0), "counters");
	CHECK(self_merging_pages() == d, "ksm_merging_pages %ld",
	      self_merging_pages());
	for (int i = 0; i < d; i++)
		CHECK(holds_pattern(p + i * page_size, 35, i % classes),
		      "page %d", i);
	for (int i = d; i < d + u; i++)
		CHECK(page_holds(p, i, 36), "page %d", i);
	munmap(p, (d + u) * page_size);
	ktap_result(checks_passed(), "duplicates_and_unique_in_one_process");
}

/*
 * full_scans counts completed scans while run=1, stands still while run=0
 * (and merged pages stay counted), and run=2 sets it back to 0 along with
 * the page counters.
 */
static void test_full_scans(void)
{
	const int n = 32;
	char *p = map_pages(2 * n);
	long before, frozen;
	double t;

	CHECK(ksm_reset() == 0, "reset");
	for (int i = 0; i < n; i++) {
		fill_page(p, i, 37);
		fill_page(p + n * page_size, i, 37);
	}
	CHECK(merge_pages(p, 2 * n) == 0, "madvise");
	CHECK(ksm_wait_counts(n, n, 0, 0), "merged");
	before = ksm_read("full_scans");
	t = monotonic_seconds();
	CHECK(ksm_wait_scans(3), "scans");
	t = monotonic_seconds() - t;
	CHECK(ksm_read("full_scans") >= before + 3, "full_scans %ld -> %ld",
	      before, ksm_read("full_scans"));

	/* Stopped: observe for several times what 3 scans took. */
	CHECK(ksm_pause() == 0, "run=0");
	frozen = ksm_read("full_scans");
	usleep((useconds_t)((t * 4 + 0.05) * 1e6));
	CHECK(ksm_read("full_scans") == frozen, "full_scans moved %ld -> %ld",
	      frozen, ksm_read("full_scans"));
	CHECK(ksm_read("pages_shared") == n && ksm_read("pages_sharing") == n,
	      "merged pages kept: %ld %ld", ksm_read("pages_shared"),
	      ksm_read("pages_sharing"));

	CHECK(ksm_write("run", 2) == 0, "run=2");
	CHECK(ksm_read("full_scans") == 0, "full_scans %ld after run=2",
	      ksm_read("full_scans"));
	CHECK(ksm_read("pages_shared") == 0 && ksm_read("pages_sharing") == 0 &&
	      ksm_read("pages_unshared") == 0 && ksm_read("pages_volatile") == 0,
	      "counters after run=2: %ld %ld %ld %ld",
	      ksm_read("pages_shared"), ksm_read("pages_sharing"),
	      ksm_read("pages_unshared"), ksm_read("pages_volatile"));
	CHECK(ksm_resume() == 0, "run=1");
	CHECK(ksm_wait_scans(1), "scans again");
	CHECK(ksm_wait_counts(n, n, 0, 0), "merged again");
	for (int i = 0; i < n; i++) {
		CHECK(page_holds(p, i, 37), "page %d", i);
		CHECK(page_holds(p + n * page_size, i, 37), "page %d", n + i);
	}
	munmap(p, 2 * n * page_size);
	ktap_result(checks_passed(), "full_scans_counts_stops_and_resets");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(4);
	test_unique();
	test_k_processes();
	test_mixed();
	test_full_scans();
	return ktap_finish();
}
