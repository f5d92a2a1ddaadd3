// SPDX-License-Identifier: GPL-2.0
/*
 * ksm_abi_procfs.c - what /proc tells of a process's KSM pages, read from
 * another process as fs/proc/base.c and task_mmu.c of mainline 6.12 show it:
 * /proc/PID/ksm_merging_pages, the four lines of /proc/PID/ksm_stat
 * (ksm_rmap_items, ksm_zero_pages, ksm_merging_pages, ksm_process_profit)
 * and the "KSM:" line of the mapping in /proc/PID/smaps, while merged and
 * after MADV_UNMERGEABLE.
 *
 * Only what every KSM must show is asserted of ksm_rmap_items and of the
 * profit: at least one rmap_item per merged page; a profit above zero when
 * most of the area is merged, and not above the merged pages' size.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ksmtest.h"

#define PAGES 64

/* The child's area: the first @pairs pairs of pages are twins, the rest unique. */
struct layout {
	char *area;
	int pairs;
	unsigned int seed;
};

/* The pattern number of page @i. */
static size_t layout_n(const struct layout *l, int i)
{
	return i < 2 * l->pairs ? i / 2 : 1000 + i;
}

static bool layout_holds(const struct layout *l)
{
	for (int i = 0; i < PAGES; i++)
		if (!holds_pattern(l->area + i * page_size, l->seed,
				   layout_n(l, i)))
			return false;
	return true;
}

static int kid_area(void *arg, int i, int cmd, int reply)
{
	struct layout *l = arg;

	madvise(l->area, PAGES * page_size, MADV_NOHUGEPAGE);
	for (int j = 0; j < PAGES; j++)
		fill_pattern(l->area + j * page_size, l->seed, layout_n(l, j));
	if (merge_pages(l->area, PAGES))
		return 1;
	kid_reply(reply, 'r');
	for (;;) {
		switch (kid_wait_cmd(cmd)) {
		case 'c':
			kid_reply(reply, layout_holds(l) ? 'y' : 'n');
			break;
		case 'u':
			kid_reply(reply, madvise(l->area, PAGES * page_size,
						 MADV_UNMERGEABLE) ? 'n' : 'y');
			break;
		default:
			return 0;
		}
	}
}

static struct kids kid;
static struct layout lay;

/* Start the child on an area that the parent reserved (so knows) but never touched. */
static bool start_child(int pairs, unsigned int seed)
{
	/* Between two PROT_NONE guard pages: a mapping of its own in smaps. */
	char r = '-', *g = mmap(NULL, (PAGES + 2) * page_size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (g == MAP_FAILED)
		return false;
	lay.area = g + page_size;
	if (mprotect(lay.area, PAGES * page_size, PROT_READ | PROT_WRITE))
		return false;
	lay.pairs = pairs;
	lay.seed = seed;
	fflush(stdout);
	if (kids_start(&kid, 1, kid_area, &lay))
		return false;
	munmap(g, (PAGES + 2) * page_size);
	return kids_collect(&kid, &r) && r == 'r';
}

static bool child_content_ok(void)
{
	char r;

	return kid_call(&kid, 0, 'c', &r) && r == 'y';
}

static long child_merging_pages(void)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ksm_merging_pages", kid.pid[0]);
	return read_long(path);
}

static bool child_unmerged(void *arg)
{
	return child_merging_pages() == 0 &&
	       ksm_stat(kid.pid[0], "ksm_merging_pages") == 0;
}

/* A unique madvised page of ours keeps ksmd scanning throughout. */
static char *keepalive;

static void test_merged(void)
{
	pid_t pid;
	long kb = PAGES * page_size / 1024, profit, items;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(start_child(PAGES / 2, 0x9001), "child ready");
	pid = kid.pid[0];
	CHECK(ksm_wait_counts(PAGES / 2, PAGES / 2, 1, 0), "all merged");

	CHECK(child_merging_pages() == PAGES, "ksm_merging_pages %ld, want %d",
	      child_merging_pages(), PAGES);
	CHECK(ksm_stat(pid, "ksm_merging_pages") == PAGES,
	      "ksm_stat ksm_merging_pages %ld", ksm_stat(pid, "ksm_merging_pages"));
	items = ksm_stat(pid, "ksm_rmap_items");
	CHECK(items >= PAGES, "ksm_rmap_items %ld", items);
	CHECK(ksm_stat(pid, "ksm_zero_pages") == 0, "ksm_zero_pages %ld",
	      ksm_stat(pid, "ksm_zero_pages"));
	profit = ksm_stat(pid, "ksm_process_profit");
	CHECK(profit > 0 && profit <= (long)(PAGES * page_size),
	      "ksm_process_profit %ld", profit);
	ktap_diag("ksm_rmap_items %ld, ksm_process_profit %ld", items, profit);

	/* Ours has nothing merged, and says so. */
	CHECK(self_merging_pages() == 0, "own ksm_merging_pages %ld",
	      self_merging_pages());
	CHECK(ksm_stat(0, "ksm_merging_pages") == 0,
	      "own ksm_stat ksm_merging_pages %ld",
	      ksm_stat(0, "ksm_merging_pages"));
	CHECK(ksm_stat(0, "ksm_process_profit") <= 0,
	      "own ksm_process_profit %ld", ksm_stat(0, "ksm_process_profit"));
	CHECK(child_content_ok(), "content");
	ktap_result(checks_passed(), "ksm_stat_of_merged_process");

	CHECK(smaps_kb(pid, lay.area, "KSM") == kb, "smaps KSM: %ld kB, want %ld",
	      smaps_kb(pid, lay.area, "KSM"), kb);
	CHECK(smaps_kb(pid, lay.area, "Rss") == kb, "smaps Rss: %ld kB",
	      smaps_kb(pid, lay.area, "Rss"));
	CHECK(smaps_kb(0, keepalive, "KSM") == 0, "own unique page: KSM %ld kB",
	      smaps_kb(0, keepalive, "KSM"));
	ktap_result(checks_passed(), "smaps_ksm_line_when_merged");
}

static void test_unmerged(void)
{
	pid_t pid = kid.pid[0];
	char r = '-';

	CHECK(kid_call(&kid, 0, 'u', &r) && r == 'y', "MADV_UNMERGEABLE");
	/* smaps reads the page tables: no KSM page left in them. */
	CHECK(smaps_kb(pid, lay.area, "KSM") == 0, "smaps KSM: %ld kB",
	      smaps_kb(pid, lay.area, "KSM"));
	CHECK(smaps_kb(pid, lay.area, "Rss") == (long)(PAGES * page_size / 1024),
	      "smaps Rss: %ld kB", smaps_kb(pid, lay.area, "Rss"));
	CHECK(child_content_ok(), "content");
	ktap_result(checks_passed(), "smaps_ksm_line_after_unmerge");

	/* The counters may follow on ksmd's next visit. */
	CHECK(ksm_wait_until(child_unmerged, NULL, 20),
	      "ksm_merging_pages %ld, ksm_stat %ld", child_merging_pages(),
	      ksm_stat(pid, "ksm_merging_pages"));
	CHECK(ksm_stat(pid, "ksm_zero_pages") == 0, "ksm_zero_pages %ld",
	      ksm_stat(pid, "ksm_zero_pages"));
	CHECK(ksm_stat(pid, "ksm_process_profit") <= 0,
	      "ksm_process_profit %ld", ksm_stat(pid, "ksm_process_profit"));
	CHECK(ksm_wait_counts(0, 0, 1, 0), "global counters");
	CHECK(child_content_ok(), "content");
	kids_send(&kid, 'q');
	CHECK(kids_wait(&kid), "child exits");
	ktap_result(checks_passed(), "ksm_stat_after_unmerge");
}

/* Only the merged pages count: 8 twin pairs among 64 pages. */
static void test_partial(void)
{
	const int pairs = 8;
	long items, profit;
	pid_t pid;

	CHECK(ksm_reset() == 0, "reset");
	CHECK(start_child(pairs, 0x9002), "child ready");
	pid = kid.pid[0];
	CHECK(ksm_wait_counts(pairs, pairs, PAGES - 2 * pairs + 1, 0),
	      "%d pairs merged", pairs);
	CHECK(child_merging_pages() == 2 * pairs, "ksm_merging_pages %ld, want %d",
	      child_merging_pages(), 2 * pairs);
	CHECK(ksm_stat(pid, "ksm_merging_pages") == 2 * pairs,
	      "ksm_stat ksm_merging_pages %ld", ksm_stat(pid, "ksm_merging_pages"));
	items = ksm_stat(pid, "ksm_rmap_items");
	CHECK(items >= 2 * pairs, "ksm_rmap_items %ld", items);
	profit = ksm_stat(pid, "ksm_process_profit");
	CHECK(profit > 0 && profit <= (long)(2 * pairs * page_size),
	      "ksm_process_profit %ld", profit);
	ktap_diag("ksm_rmap_items %ld, ksm_process_profit %ld", items, profit);
	CHECK(smaps_kb(pid, lay.area, "KSM") == (long)(2 * pairs * page_size / 1024),
	      "smaps KSM: %ld kB", smaps_kb(pid, lay.area, "KSM"));
	CHECK(child_content_ok(), "content");
	kids_send(&kid, 'q');
	CHECK(kids_wait(&kid), "child exits");
	ktap_result(checks_passed(), "partly_merged_area");
}

int main(void)
{
	ksm_save_settings();
	ktap_plan(5);
	keepalive = map_pages(1);
	fill_page(keepalive, 0, 0x9000);
	/* Not in the children: a page shared with them would never settle. */
	madvise(keepalive, page_size, MADV_DONTFORK);
	merge_pages(keepalive, 1);
	test_merged();
	test_unmerged();
	test_partial();
	return ktap_finish();
}
